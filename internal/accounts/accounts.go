package accounts

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Errors of [Store] methods. Backends wrap them; test with errors.Is.
var (
	// ErrNotFound: the account, workspace or key named does not exist.
	ErrNotFound = errors.New("accounts: not found")
	// ErrExists: an account, workspace or key with that id already exists.
	ErrExists = errors.New("accounts: already exists")
	// ErrBalanceLimit: a credit that would take the account's balance above the store's cap
	// (1e18 micro-USD, i.e. 1e12 USD); nothing was credited.
	ErrBalanceLimit = errors.New("accounts: the balance would exceed its limit")
)

// Billing is how an account pays (contract.md "Billing").
type Billing string

// The billing modes. The zero value is not valid; [ParseBilling] maps "" to Unmetered.
const (
	// Unmetered: usage and cost are recorded, nothing is refused for balance.
	Unmetered Billing = "unmetered"
	// Prepaid: a request whose reserve exceeds the balance is refused (402 insufficient_credit,
	// limit kind [LimitKindCredit]).
	Prepaid Billing = "prepaid"
)

// LimitKindCredit is the x-switchyard-limit-kind of a prepaid account's refusal.
const LimitKindCredit = "credit"

// ParseBilling reads settings.billing: "" and "unmetered" are Unmetered, "prepaid" Prepaid;
// anything else is an error.
func ParseBilling(s string) (Billing, error) {
	switch s {
	case "", string(Unmetered):
		return Unmetered, nil
	case string(Prepaid):
		return Prepaid, nil
	}
	return "", fmt.Errorf("billing must be unmetered or prepaid, not %q", s)
}

// Account is a customer of the gateway: the owner of workspaces, keys and a balance.
type Account struct {
	ID   string // opaque, "acct_..."
	Name string
	// Settings is a JSON object (never nil once stored; "{}" when empty).
	Settings json.RawMessage
	// Billing is Unmetered or Prepaid, derived from settings.billing.
	Billing Billing
	// BalanceMicroUSD is credits minus settled costs, in micro-USD; it may be negative for an
	// unmetered account. Maintained by the store (Credit, AppendLedger); not changed by
	// UpdateAccount.
	BalanceMicroUSD int64
	CreatedAt       time.Time
}

// Workspace groups keys of one account.
type Workspace struct {
	ID        string // opaque, "ws_..."
	AccountID string
	Name      string
	Settings  json.RawMessage // a JSON object
	CreatedAt time.Time
}

// Key is a stored API key. The secret itself is never stored: only its SHA-256.
type Key struct {
	ID          string // opaque, "key_..."
	AccountID   string
	WorkspaceID string // "" when the key belongs to no workspace
	Name        string
	// Prefix is the display id: the first 8 characters after "sk-sy-".
	Prefix     string
	SecretHash [sha256.Size]byte
	Settings   json.RawMessage // a JSON object
	// RevokedAt is when the key was revoked; the zero time while it is active.
	RevokedAt time.Time
	CreatedAt time.Time
}

// Kind is a ledger entry's kind.
type Kind string

// The ledger kinds (R-BILL-1, R-BILL-2; docs/admin-api.md "Ledger"). Only settle and credit
// change a balance; reserve and release record what a request held and gave back (the reserves
// themselves live in the admission store and the Cache).
const (
	// KindReserve: a request admitted holding money (a prepaid balance or a budget) reserved
	// AmountMicroUSD, the most it can cost, before dispatch.
	KindReserve Kind = "reserve"
	// KindSettle: a committed request's cost, taken from the balance; it ends its reserve.
	KindSettle Kind = "settle"
	// KindRelease: a request that did not commit gave its reserve (AmountMicroUSD) back whole.
	KindRelease Kind = "release"
	// KindCredit: an amount added to the balance by the admin API.
	KindCredit Kind = "credit"
)

// Tokens are the token counts of a ledger entry (the committed attempt's usage).
type Tokens struct {
	Input, Cached, CacheWrite, Output, Reasoning int64
}

// LedgerEntry is one row of the ledger.
type LedgerEntry struct {
	// ID is assigned by the store, increasing in order of writing; ignored on write.
	ID        int64
	At        time.Time
	AccountID string
	KeyID     string // the stored key id, or the static key's name; "" for a credit
	RequestID string // "" for a credit
	// Model is the catalog model id: the committed attempt's (settle), the requested one
	// (reserve, release).
	Model string
	// Deployment is the deployment that served the committed attempt (settle); "" otherwise.
	Deployment string
	Kind       Kind
	Tokens     Tokens // settle only
	// AmountMicroUSD is not negative: the cost charged (settle), the amount reserved (reserve)
	// or given back (release), or the amount added (credit).
	AmountMicroUSD int64
	// Mark says how a settle's response ended when it did not complete (R-BILL-2):
	// MarkUpstreamTruncated or MarkClientCancelled; "" for a completed response and for the
	// other kinds.
	Mark string
	// UsageProvenance is a settle's audit usage provenance: "observed" (reported by the
	// provider) or "estimated" (the gateway's estimate, for a stream that ended before its
	// provider reported usage); "" for the other kinds.
	UsageProvenance string
	// Replica is the id of the gateway process that wrote a reserve entry (the Writer's
	// replica, e.g. "rep_..."): the crash reconciliation closes the reserves of replicas that
	// are gone. "" for the other kinds, and for entries written before store migration 0007.
	Replica string
}

// MaxEntryMicroUSD bounds a ledger entry's amount: 2^46 micro-USD, about 70 million USD, far
// above any one request's cost or reserve. The request path clamps its entries to it
// (billing.Reservation), a journal line above it is not one Log wrote, and no batch of
// entries can overflow a balance's int64 sum.
const MaxEntryMicroUSD = 1 << 46

// MaxEntryTokens bounds each token count of a settle: 2^40, the relay's MaxUsageTokens
// (provider reports saturate there).
const MaxEntryTokens = 1 << 40

// The marks of a settle entry (R-BILL-2).
const (
	// MarkUpstreamTruncated: the provider's stream was cut after output reached the caller;
	// billed for the usage produced.
	MarkUpstreamTruncated = "upstream-truncated"
	// MarkClientCancelled: the caller went away after output started; billed for the usage
	// produced up to the cancellation.
	MarkClientCancelled = "client-cancelled"
)

// The marks of the entries written by the crash reconciliation ([Reconciler]) for a reserve
// whose replica died before writing its settle or release.
const (
	// MarkAuditSettled (a settle): the audit shows the request committed; billed the committed
	// attempt's audited cost.
	MarkAuditSettled = "audit-settled"
	// MarkAuditReleased (a release): the audit shows the request did not commit; nothing billed.
	MarkAuditReleased = "audit-released"
	// MarkUnsettledCrash (a release): the audit does not have the request either, so whether it
	// was served is unknown; nothing billed, the reserve returned, and the entry counted
	// (switchyard_ledger_reconciled_total) and logged for an operator to follow up.
	MarkUnsettledCrash = "unsettled-crash"
)

// Store is what this package and the admin API need of the persistent store. Implementations
// are safe for concurrent use; every method returns the context's error when ctx is done.
type Store interface {
	// CreateAccount stores a new account (Settings nil is stored as {}; BalanceMicroUSD is
	// stored as given, normally 0). ErrExists when the id is taken.
	CreateAccount(ctx context.Context, a *Account) error
	// CreateWorkspace stores a new workspace. ErrNotFound when its account does not exist,
	// ErrExists when the id is taken.
	CreateWorkspace(ctx context.Context, w *Workspace) error
	// CreateKey stores a new key. ErrNotFound when its account does not exist, or its
	// workspace does not exist in that account; ErrExists when the id or the hash is taken.
	CreateKey(ctx context.Context, k *Key) error
	// Account, Workspace and Key return one row by id, or ErrNotFound.
	Account(ctx context.Context, id string) (*Account, error)
	Workspace(ctx context.Context, id string) (*Workspace, error)
	Key(ctx context.Context, id string) (*Key, error)
	// UpdateAccount reads the account, calls f on it and writes back Name, Settings and
	// Billing, all in one transaction that holds the row (concurrent updates serialise). It
	// returns the account written, ErrNotFound, or f's error (nothing is written then).
	UpdateAccount(ctx context.Context, id string, f func(*Account) error) (*Account, error)
	// UpdateWorkspace is UpdateAccount for a workspace: Name and Settings are written back.
	UpdateWorkspace(ctx context.Context, id string, f func(*Workspace) error) (*Workspace, error)
	// UpdateKey is UpdateAccount for a key: Name, Settings and RevokedAt are written back.
	UpdateKey(ctx context.Context, id string, f func(*Key) error) (*Key, error)
	// Workspaces returns every workspace of the account accountID, in no particular order: an
	// empty slice when it has none, including when no such account exists (no ErrNotFound).
	// The admin API builds the account's settings tree from it for the conflict check (R-KEY-3).
	Workspaces(ctx context.Context, accountID string) ([]Workspace, error)
	// ActiveKeys returns every key not revoked, in no particular order.
	ActiveKeys(ctx context.Context) ([]Key, error)
	// Accounts returns every account, in no particular order.
	Accounts(ctx context.Context) ([]Account, error)
	// Credit appends a credit entry e (Kind must be credit, AmountMicroUSD > 0) and adds its
	// amount to the account's balance in one transaction, returning the new balance.
	// ErrNotFound when the account does not exist; ErrBalanceLimit (nothing written) when the
	// balance would exceed the store's cap (accountsql.MaxBalanceMicroUSD, $1e12).
	Credit(ctx context.Context, e *LedgerEntry) (balanceMicroUSD int64, err error)
	// AppendLedger appends entries in one transaction, in order: all or none. A settle entry
	// subtracts its amount from its account's balance in the same transaction (an account not
	// stored, such as a static key's, has no balance to change); no other kind changes a
	// balance. A settle, reserve or release entry whose request id is already in the ledger
	// with that kind is skipped, so retrying a batch whose commit was lost writes nothing twice.
	// A reserve entry opens its request (OpenReserves lists it) and a settle or release of the
	// same request id closes it, in the same transaction.
	AppendLedger(ctx context.Context, entries []LedgerEntry) error
	// Ledger returns the account's entries, newest first, at most limit (limit <= 0: all).
	Ledger(ctx context.Context, accountID string, limit int) ([]LedgerEntry, error)
	// PolicyStore holds routing policies and BYOK connections (byok.go).
	PolicyStore
}

// SecretPrefix starts every stored key's secret.
const SecretPrefix = "sk-sy-"

// secretLen is the count of base62 characters after SecretPrefix.
const secretLen = 32

// PrefixLen is the length of a key's display Prefix.
const PrefixLen = 8

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewSecret returns a new key secret: SecretPrefix + 32 base62 characters from crypto/rand
// (about 190 bits), its display prefix (the first PrefixLen characters after SecretPrefix) and
// its SHA-256.
func NewSecret() (secret, prefix string, hash [sha256.Size]byte) {
	b := make([]byte, len(SecretPrefix)+secretLen)
	copy(b, SecretPrefix)
	randBase62(b[len(SecretPrefix):])
	secret = string(b)
	return secret, secret[len(SecretPrefix) : len(SecretPrefix)+PrefixLen], HashSecret(secret)
}

// HashSecret is the SHA-256 under which a key is stored and looked up.
func HashSecret(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// NewID returns prefix + "_" + 20 base62 characters from crypto/rand, e.g. "acct_...".
func NewID(prefix string) string {
	b := make([]byte, len(prefix)+1+20)
	copy(b, prefix)
	b[len(prefix)] = '_'
	randBase62(b[len(prefix)+1:])
	return string(b)
}

// randBase62 fills b with uniform base62 characters (rejection sampling: no modulo bias).
func randBase62(b []byte) {
	var buf [64]byte
	for i := 0; i < len(b); {
		_, _ = rand.Read(buf[:]) // never fails (crypto/rand)
		for _, c := range buf {
			if c >= 248 { // 248 = 4*62
				continue
			}
			b[i] = base62[c%62]
			if i++; i == len(b) {
				return
			}
		}
	}
}

// ValidSettings reports whether s is a JSON object; nil and empty count as {}.
func ValidSettings(s json.RawMessage) error {
	s = bytes.TrimSpace(s)
	if len(s) == 0 {
		return nil
	}
	if s[0] != '{' || !json.Valid(s) {
		return errors.New("settings must be a JSON object")
	}
	return nil
}

// MergeSettings applies patch to old, both JSON objects (nil or empty is {}), field by field
// (contract.md: a field present replaces that field, an absent field is unchanged, null
// clears it). The merge is shallow: a nested object in patch replaces the old one whole. It
// returns an error when either is not a JSON object.
func MergeSettings(old, patch json.RawMessage) (json.RawMessage, error) {
	var o, p map[string]json.RawMessage
	if err := decodeObject(old, &o); err != nil {
		return nil, err
	}
	if err := decodeObject(patch, &p); err != nil {
		return nil, err
	}
	if o == nil {
		o = make(map[string]json.RawMessage, len(p))
	}
	for k, v := range p {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(o, k)
		} else {
			o[k] = v
		}
	}
	return json.Marshal(o) // keys sorted: a canonical form
}

func decodeObject(s json.RawMessage, m *map[string]json.RawMessage) error {
	if err := ValidSettings(s); err != nil {
		return err
	}
	if len(bytes.TrimSpace(s)) == 0 {
		return nil
	}
	return json.Unmarshal(s, m)
}

// SettingsBilling reads settings.billing of an account's settings (a JSON object).
func SettingsBilling(settings json.RawMessage) (Billing, error) {
	var v struct {
		Billing *string `json:"billing"`
	}
	if len(bytes.TrimSpace(settings)) > 0 {
		if err := json.Unmarshal(settings, &v); err != nil {
			return "", errors.New("settings.billing must be a string: unmetered or prepaid")
		}
	}
	if v.Billing == nil {
		return Unmetered, nil
	}
	b, err := ParseBilling(*v.Billing)
	if err != nil {
		return "", fmt.Errorf("settings.%w", err)
	}
	return b, nil
}

// SettleFilter selects the settle entries [SpendReader.SettledMicroUSD] sums: those at or after
// From (the zero time: all) of the one scope set, a key (KeyID: a stored key's id or a static
// key's name, as the ledger records it), the keys of a workspace (WorkspaceID), or an account
// (AccountID). Exclude leaves out the settles of those request ids (an admission store's seed
// counts them from its float; at most a few thousand ids).
type SettleFilter struct {
	KeyID, WorkspaceID, AccountID string
	From                          time.Time
	Exclude                       []string
}

// SpendReader reads spend back from the ledger: what the admission store's budget counters are
// seeded from at start, in a new period and after the shared store lost its data (R-BILL-4).
// The SQL stores implement it.
type SpendReader interface {
	// SettledMicroUSD returns the sum of the settle entries f selects, in micro-USD.
	SettledMicroUSD(ctx context.Context, f SettleFilter) (int64, error)
}

// BalanceReader reads a prepaid balance as if some settles had not been made, in one read (a
// seed of the admission store whose float counts those settles): the stored balance plus the
// stored settles of the account with a request id in exclude. found is false when the account
// does not exist. The SQL stores implement it.
type BalanceReader interface {
	BalanceExcludingMicroUSD(ctx context.Context, accountID string, exclude []string) (balance int64, found bool, err error)
}
