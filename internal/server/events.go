package server

import (
	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/audit"
	"github.com/switchyard-gw/switchyard/internal/failure"
	"github.com/switchyard-gw/switchyard/internal/plan"
	"github.com/switchyard-gw/switchyard/internal/relay"
)

// The admission events of a request (R-AUDIT-2, seed 000's admission_events; issue 11 item 5;
// docs/audit.md "Admission events"): the routes its plans dropped for an open circuit or a
// paused provider, the limits checked in the admission store, the reserve taken, and a
// refusal. They go into the audit record's fixed-size AdmissionEvents (no allocation per
// event); the relay adds the candidates a circuit skips at their turn.

// planEvents adds an event for each route that cs's plans (the requested model's and its
// fallbacks') dropped with reason "circuit open", saying which circuit or pause it was. It
// reads the circuits only for such routes (no work when none was dropped for that reason).
func (s *Server) planEvents(ev *audit.AdmissionEvents, cs *callState) {
	s.dropEvents(ev, &cs.plan)
	for _, fb := range cs.fallbacks {
		s.dropEvents(ev, fb.Plan)
	}
}

func (s *Server) dropEvents(ev *audit.AdmissionEvents, p *plan.Plan) {
	for i := range p.Dropped {
		d := &p.Dropped[i]
		if d.Reason != plan.ReasonCircuitOpen {
			continue
		}
		scope := d.Deployment // a caller's own connection pauses on its own (catalog.Deployment.PauseScope)
		if dep := s.cat.Deployment(d.Deployment); dep != nil {
			scope = dep.PauseScope()
		}
		if e, ok := relay.RouteEvent(s.circuits.Blocked(scope, d.Deployment, d.Model), audit.StagePlan, d.Deployment, d.Model); ok {
			ev.Add(e)
		}
	}
}

// refusedEvent is the admission event of a refusal: its class and, for a limit, its kind.
func refusedEvent(err error) audit.AdmissionEvent {
	fe := failure.From(err)
	if fe == nil {
		return audit.AdmissionEvent{Kind: audit.EventRefused}
	}
	return audit.AdmissionEvent{Kind: audit.EventRefused, ErrorCode: string(fe.Class), LimitKind: fe.LimitKind}
}

// limitsEvent is the limits_checked event of one admission request: the scopes of its layers,
// its tpm charge, its reserve and whether the prepaid balance is part of it.
func limitsEvent(req *admission.Request) audit.AdmissionEvent {
	e := audit.AdmissionEvent{Kind: audit.EventLimitsChecked, Tokens: req.Tokens, Credit: req.CreditAccount != "",
		ReserveUSD: float64(req.ReserveMicroUSD) / 1e6}
	for i := range req.Layers {
		e.Scopes |= scopeBit(req.Layers[i].Scope)
	}
	return e
}

// reserveEvent is the reserve_taken event of an admitted request that holds money: the scopes
// whose budgets hold the reserve, and whether the prepaid balance does.
func reserveEvent(req *admission.Request) audit.AdmissionEvent {
	e := audit.AdmissionEvent{Kind: audit.EventReserveTaken, Credit: req.CreditAccount != "",
		ReserveUSD: float64(req.ReserveMicroUSD) / 1e6}
	for i := range req.Layers {
		if req.Layers[i].Limits.BudgetMicroUSD > 0 {
			e.Scopes |= scopeBit(req.Layers[i].Scope)
		}
	}
	return e
}

func scopeBit(s admission.Scope) uint8 {
	switch s {
	case admission.ScopeKey:
		return audit.ScopeKey
	case admission.ScopeWorkspace:
		return audit.ScopeWorkspace
	case admission.ScopeAccount:
		return audit.ScopeAccount
	}
	return 0
}

// candidates counts the candidates of cs's plans.
func candidates(cs *callState) int {
	n := len(cs.plan.Candidates)
	for _, fb := range cs.fallbacks {
		n += len(fb.Plan.Candidates)
	}
	return n
}
