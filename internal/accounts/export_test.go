package accounts

import "github.com/switchyard-gw/switchyard/internal/batch"

// NextWindow and WindowGrowBatch export the Writer's commit window rule to the tests.
var NextWindow = batch.NextWindow

const WindowGrowBatch = windowGrowBatch
