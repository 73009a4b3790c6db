// Package accounts is the domain of stored accounts, workspaces, API keys and the ledger
// (R-KEY-1, R-BILL-1, R-BILL-2, R-BILL-4; contract.md "Admin API" and "Billing"):
//
//   - the types [Account], [Workspace], [Key] and [LedgerEntry], and the consumer-side
//     [Store] interface that both store backends (store/sqlite, store/postgres) implement;
//   - key secrets ([NewSecret]: "sk-sy-" + 32 base62 characters from crypto/rand), of which
//     only the SHA-256 ([HashSecret]) and a display prefix are ever stored (R-KEY-1);
//   - the [Cache]: the active stored keys by SHA-256 and each account's billing and balance,
//     held in memory so that authenticating a request and telling a prepaid account never touch
//     the store (the prepaid balance itself is reserved against in the admission store). The admin API updates it in this process at once (a revoked key stops
//     working before the DELETE answers); [Cache.Run] reloads it from the store periodically
//     so that other replicas see changes within one interval;
//   - the [Writer]: a bounded queue that writes settle entries to the ledger in batches off the
//     request path, retrying a failed batch (credits are written synchronously by the admin
//     API instead; see [Writer] for what a crash can lose);
//   - routing policies ([Policy], [Funding], R-POLICY, R-ORDER-7) and BYOK connections
//     ([Connection], R-KEY-5; deployment name "byok:<id>"), stored through [PolicyStore] and
//     held by the Cache ([Cache.Policy], [Cache.Connections]). A connection's API key is held
//     here as stored: sealed (internal/secret) when store.secret_key is set, else in the clear;
//     the server opens it only to build the connection's upstream client, and it is never
//     returned by the admin API nor logged.
//
// Costs are integers in micro-USD (1e-6 USD) everywhere, never floats. Settings are stored as
// JSON objects; their layered meaning belongs to the layers package, which the Cache uses to
// keep each key's effective settings (account -> workspace -> key, [KeyInfo].Effective) and its
// limits as admission layers, recomputed whenever one of the three is put or reloaded (R-KEY-2).
//
// The package does not import net/http.
package accounts
