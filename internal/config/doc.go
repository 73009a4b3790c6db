// Package config owns the YAML configuration file of contract.md ("Configuration file"):
// reading it (Load, Parse), the built-in default catalog (Default), defaults (one
// applyDefaults) and validation (Validate). The types are plain data; runtime objects such as
// the catalog are built from them elsewhere (catalog.New).
//
// Reading a file:
//
//   - ${NAME} and ${NAME:-default} are interpolated in scalar values (never in keys or
//     comments); "$${" is a literal "${". An unset NAME without a default is a problem naming
//     it, with file:line, except for a credential (api_key, secret, token) written exactly as
//     "${NAME}", which is then empty: the built-in catalog must load with OPENAI_API_KEY or
//     ANTHROPIC_API_KEY unset. An empty key secret is still rejected while auth is required.
//     Interpolation happens in the parsed tree, before typing, so "max_body_bytes: ${MAX}"
//     works and a value can never inject YAML structure.
//   - Decoding is strict: an unknown field, a value of the wrong type, a duration that is not a
//     Go duration string ("20s"), a duplicated key or a second YAML document is a problem.
//   - Every problem is reported at once (errors.Join of *Problem, in line order), each printed
//     "FILE:LINE: PATH: MSG", so `switchyard check` can show them all.
//   - Bad values are rejected, never logged and replaced by a default. A field left out takes
//     its default; a number written as 0 where 0 would mean something else (weight: 0,
//     failures: 0, headers: 0s) is rejected rather than defaulted.
//
// A catalog model with no route is allowed (listed, but unavailable); so is an empty catalog.
//
// Dedicated endpoints (endpoints:, deployments[].reserved) are validated against the catalog
// and the deployments: see Validate.
//
// Requirements: the configuration side of R-KEY-6 (dedicated endpoints), of R-MODEL (unique ids and aliases, an alias never
// shadows an id), R-ORDER (strategy names, price_blend, default 3:1), R-FAIL-5 (deadlines),
// R-CIRCUIT-7 (configurable thresholds), R-BILL-3 (model and route prices),
// R-BILL-1 (keys[].limits and accounts[].limits: rpm, tpm, concurrency, budget_usd,
// budget_period; see docs/limits.md).
package config
