package accounts

// NextWindow and WindowGrowBatch export the Writer's commit window rule to the tests.
var NextWindow = nextWindow

const WindowGrowBatch = windowGrowBatch
