package plan

import (
	"encoding/json"
	"math"
)

// candidateJSON is a candidate as POST /v1/route shows it (contract.md).
type candidateJSON struct {
	Deployment    string   `json:"deployment"`
	Provider      string   `json:"provider"`
	Model         string   `json:"model"`
	UpstreamModel string   `json:"upstream_model"`
	Priority      int      `json:"priority"`
	Weight        float64  `json:"weight"`
	Band          int      `json:"band"`
	Score         *float64 `json:"score"` // null when NaN
	Reserved      bool     `json:"reserved,omitempty"`
	BYOK          bool     `json:"byok,omitempty"`
}

// planJSON is the body of POST /v1/route (contract.md).
type planJSON struct {
	Model        string      `json:"model"`
	Resolved     string      `json:"resolved_model"`
	Endpoint     string      `json:"endpoint,omitempty"`
	Policy       string      `json:"policy,omitempty"`
	Funding      string      `json:"funding,omitempty"`
	Strategy     string      `json:"strategy"`
	DegradedFrom string      `json:"degraded_from,omitempty"`
	SessionKey   string      `json:"session_key"`
	AttemptLimit int         `json:"attempt_limit,omitempty"`
	Candidates   []Candidate `json:"candidates"`
	Dropped      []Dropped   `json:"dropped"`
}

// MarshalJSON encodes the candidate as contract.md's POST /v1/route shows it: deployment,
// provider, model, upstream_model, priority, weight, band and score, the score null when it is
// NaN (JSON has no NaN), reserved: true for a dedicated endpoint's reserved route and byok: true
// for a route of the caller's own connection. A candidate without a route encodes its band, weight and score only.
func (c Candidate) MarshalJSON() ([]byte, error) {
	v := candidateJSON{Weight: c.Weight, Band: c.Band, Reserved: c.Reserved, BYOK: c.BYOK}
	if !math.IsNaN(c.Score) && !math.IsInf(c.Score, 0) {
		s := c.Score
		v.Score = &s
	}
	if rt := c.Route; rt != nil {
		v.Model, v.UpstreamModel = rt.Model, rt.UpstreamModel
		if d := rt.Deployment; d != nil {
			v.Deployment, v.Provider, v.Priority = d.Name, d.Provider, d.Priority
		}
	}
	return json.Marshal(v)
}

// MarshalJSON encodes the plan as the body of POST /v1/route (contract.md): model,
// resolved_model, endpoint (for a dedicated endpoint), policy and funding (under a routing
// policy or with BYOK connections), strategy, degraded_from (when degraded), session_key, attempt_limit (when
// set), candidates in order and dropped routes with reasons; empty lists encode as [].
func (p Plan) MarshalJSON() ([]byte, error) {
	v := planJSON{Model: p.Model, Resolved: p.Resolved, Endpoint: p.Endpoint, Policy: p.Policy, Funding: p.Funding, Strategy: p.Strategy, DegradedFrom: p.DegradedFrom,
		SessionKey: p.SessionKey, AttemptLimit: p.AttemptLimit, Candidates: p.Candidates, Dropped: p.Dropped}
	if v.Candidates == nil {
		v.Candidates = []Candidate{}
	}
	if v.Dropped == nil {
		v.Dropped = []Dropped{}
	}
	return json.Marshal(v)
}
