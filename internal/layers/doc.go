// Package layers merges the settings of the four configuration layers — account, workspace,
// key and request, from the most general to the most specific — into the effective settings of
// one caller, and refuses a saved change that would leave a workspace or key with no candidate.
// It is pure: no I/O, no net/http, no clock.
//
// It owns:
//
//   - [Settings], one layer's own settings, and [Apply], the PATCH merge of contract.md ("a
//     field present replaces that field, an absent field is unchanged, null clears it");
//   - [Effective], the merge: each field's value and the layer(s) that fixed it, in the JSON
//     shape of GET /admin/v1/keys/{id}/effective;
//   - [Check] and [Propose], the conflict check of a saved account tree ([Tree]).
//
// Rules implemented here:
//
//   - R-KEY-2: the preference axis (strategy, preferred_providers, allow_request_override,
//     policy, and the account-only billing) is replaced whole by the most specific layer that
//     sets it; the constraint axis (models, providers, tier_scope) is intersected across every
//     layer, so a lower layer can only narrow what a higher one allows, never widen it. Limits
//     are not merged: each layer keeps its own and all are enforced (internal/admission).
//   - R-KEY-3: tier scopes intersect by the table all∩official = official, all∩value = value,
//     official∩value = nothing; an empty intersection of models, providers or tier_scope is a
//     conflict ([ConflictError]), refused when saved ([Check]) and naming every workspace and
//     key it would leave with no candidate.
//   - R-KEY-4: every effective field reports the layer that fixed it ([Pref.FixedBy]) or the
//     layers that constrained it ([Constraint.FixedBy]).
//
// Unset versus empty. A preference field is a pointer: nil is unset (the layer inherits), and a
// set value — even an empty preferred_providers list — replaces what is above. A constraint list
// (models, providers) follows R-ADMIT-1, "empty = no restriction": nil and an empty list both
// mean the layer does not restrict, and [Apply] stores either as nil. A layer cannot say "allow
// nothing": such a layer would leave its keys with no candidate, which R-KEY-3 refuses anyway
// (delete or revoke the key instead). tier_scope "" is unset; "all" restricts nothing and so is
// never listed in fixed_by. A limit of 0 is no limit, as in the configuration file.
package layers
