package accounts

import (
	"context"
	"fmt"
)

// byokState is the cache's copy of the policies (by id) and the active connections (by key id).
// Reload replaces it whole; PutPolicy and PutConnection copy-on-write, so slices handed out are
// never modified.
type byokState struct {
	policies map[string]*Policy
	conns    map[string][]Connection
}

func (c *Cache) loadBYOK(ctx context.Context) (byokState, error) {
	ps, err := c.st.Policies(ctx)
	if err != nil {
		return byokState{}, fmt.Errorf("accounts: reloading policies: %w", err)
	}
	cs, err := c.st.ActiveConnections(ctx)
	if err != nil {
		return byokState{}, fmt.Errorf("accounts: reloading connections: %w", err)
	}
	st := byokState{policies: make(map[string]*Policy, len(ps)), conns: make(map[string][]Connection)}
	for i := range ps {
		st.policies[ps[i].ID] = &ps[i]
	}
	for _, conn := range cs {
		st.conns[conn.KeyID] = append(st.conns[conn.KeyID], conn)
	}
	return st, nil
}

// Policy returns the cached policy with id, or nil and false. The *Policy is never modified
// and may be kept.
func (c *Cache) Policy(id string) (*Policy, bool) {
	c.mu.RLock()
	p := c.byok.policies[id]
	c.mu.RUnlock()
	return p, p != nil
}

// Connections returns the active connections of the key with keyID (API keys included: for the
// request path only, never to be shown or logged); nil when it has none. The slice is shared:
// callers must not modify it.
func (c *Cache) Connections(keyID string) []Connection {
	c.mu.RLock()
	cs := c.byok.conns[keyID]
	c.mu.RUnlock()
	return cs
}

// PutPolicy adds or replaces p in the cache; the admin API calls it after storing a policy.
func (c *Cache) PutPolicy(p *Policy) {
	c.mu.Lock()
	m := make(map[string]*Policy, len(c.byok.policies)+1)
	for id, v := range c.byok.policies {
		m[id] = v
	}
	cp := *p
	m[p.ID] = &cp
	c.byok.policies = m
	c.mu.Unlock()
}

// PutConnection adds conn to its key's connections in the cache, or removes it when revoked;
// the admin API calls it after storing a connection.
func (c *Cache) PutConnection(conn *Connection) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.byok.conns[conn.KeyID]
	next := make([]Connection, 0, len(old)+1)
	for _, o := range old {
		if o.ID != conn.ID {
			next = append(next, o)
		}
	}
	if conn.RevokedAt.IsZero() {
		next = append(next, *conn)
	}
	m := make(map[string][]Connection, len(c.byok.conns)+1)
	for k, v := range c.byok.conns {
		m[k] = v
	}
	if len(next) == 0 {
		delete(m, conn.KeyID)
	} else {
		m[conn.KeyID] = next
	}
	c.byok.conns = m
}
