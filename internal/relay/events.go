package relay

import (
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/circuit"
	"github.com/switchyard-gw/switchyard/internal/plan"
)

// RouteEvent is the admission event of a route that a circuit refused (R-AUDIT-2, issue 11
// item 5): err is circuit.Set's Admit or Blocked error (a *circuit.PausedError or
// *circuit.OpenError), stage audit.StagePlan or audit.StageDispatch. ok is false for any
// other err (nil included).
func RouteEvent(err error, stage, deployment, model string) (e audit.AdmissionEvent, ok bool) {
	switch ce := err.(type) { // Admit and Blocked return these types unwrapped
	case *circuit.PausedError:
		pe := ce
		return audit.AdmissionEvent{Kind: audit.EventProviderPaused, Stage: stage, Deployment: deployment, Model: model,
			Provider: pe.Provider, Until: pe.Until}, true
	case *circuit.OpenError:
		oe := ce
		c := audit.CircuitDeployment
		if oe.Model != "" {
			c = audit.CircuitModel
		}
		return audit.AdmissionEvent{Kind: audit.EventCircuitOpen, Stage: stage, Deployment: deployment, Model: model,
			Circuit: c, Until: oe.Until}, true
	}
	return audit.AdmissionEvent{}, false
}

// routeContext copies the candidate's route context onto its attempt: band, score, the
// strategy of its plan and the route's region (R-AUDIT-2).
func routeContext(a *audit.Attempt, c *plan.Candidate, p *plan.Plan) {
	a.Band, a.Score, a.Strategy, a.Region = c.Band, audit.ScoreOf(c.Score), p.Strategy, c.Route.Region
}
