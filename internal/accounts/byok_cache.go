package accounts

import (
	"context"
	"fmt"
	"slices"
)

// byokState is the cache's handle on its policies and active connections: a pointer set once,
// under Cache.mu, and never replaced afterwards, so Reload's assignment of the state returned by
// loadBYOK (the same pointer) never undoes a put made while it read the store.
type byokState struct{ d *byokData }

// byokData is the cache's copy of the policies (by id) and the active connections (by key id).
// Every field is guarded by Cache.mu. The maps are copied on write, so a slice or *Policy handed
// out is never modified.
type byokData struct {
	policies map[string]*Policy
	conns    map[string][]Connection
	// seq counts the loads started and the puts made; loading is the number of loads between
	// their start and their install; log holds the puts made while a load was in flight, which
	// a load replays over what it read (the store may have been read before they were written).
	seq     uint64
	loading int
	log     []byokPut
	// installed is the seq at which the load last installed started: an older load finishing
	// later does not install its older reading over it.
	installed uint64
}

// byokPut is one PutPolicy or PutConnection, in the log of byokData.
type byokPut struct {
	seq    uint64
	policy *Policy     // a policy put (removed when deleted), or nil
	conn   *Connection // a connection put (removed when revoked), or nil
	// deleted says the policy was deleted: only policy.ID is read.
	deleted bool
}

// dataLocked returns the cache's byokData, allocating it on first use. c.mu must be held for
// writing.
func (c *Cache) dataLocked() *byokData {
	if c.byok.d == nil {
		c.byok.d = &byokData{policies: map[string]*Policy{}, conns: map[string][]Connection{}}
	}
	return c.byok.d
}

// loadBYOK reads the policies and the active connections from the store and installs them,
// with the puts made since the read began replayed over them. It returns the cache's state,
// for Reload to keep.
func (c *Cache) loadBYOK(ctx context.Context) (byokState, error) {
	c.mu.Lock()
	d := c.dataLocked()
	d.seq++
	start := d.seq
	d.loading++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if d.loading--; d.loading == 0 {
			d.log = nil
		}
		c.mu.Unlock()
	}()

	ps, err := c.st.Policies(ctx)
	if err != nil {
		return byokState{}, fmt.Errorf("accounts: reloading policies: %w", err)
	}
	cs, err := c.st.ActiveConnections(ctx)
	if err != nil {
		return byokState{}, fmt.Errorf("accounts: reloading connections: %w", err)
	}
	policies := make(map[string]*Policy, len(ps))
	for i := range ps {
		policies[ps[i].ID] = &ps[i]
	}
	conns := make(map[string][]Connection)
	for _, conn := range cs {
		conns[conn.KeyID] = append(conns[conn.KeyID], conn)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if start < d.installed { // a load that began later has installed a newer reading
		return c.byok, nil
	}
	for _, p := range d.log {
		if p.seq > start {
			applyPut(policies, conns, p)
		}
	}
	d.policies, d.conns, d.installed = policies, conns, start
	return c.byok, nil
}

// applyPut applies p to policies and conns in place.
func applyPut(policies map[string]*Policy, conns map[string][]Connection, p byokPut) {
	if p.policy != nil {
		if p.deleted {
			delete(policies, p.policy.ID)
		} else {
			policies[p.policy.ID] = p.policy
		}
		return
	}
	conn := p.conn
	old := conns[conn.KeyID]
	next := make([]Connection, 0, len(old)+1)
	for _, o := range old {
		if o.ID != conn.ID {
			next = append(next, o)
		}
	}
	if conn.RevokedAt.IsZero() {
		next = append(next, *conn)
	}
	if len(next) == 0 {
		delete(conns, conn.KeyID)
	} else {
		conns[conn.KeyID] = next
	}
}

// putBYOKLocked applies p to the cache (copying the maps) and logs it for the loads in flight.
// c.mu must be held for writing.
func (c *Cache) putBYOKLocked(p byokPut) {
	d := c.dataLocked()
	d.seq++
	p.seq = d.seq
	if d.loading > 0 {
		d.log = append(d.log, p)
	}
	if p.policy != nil {
		m := make(map[string]*Policy, len(d.policies)+1)
		for id, v := range d.policies {
			m[id] = v
		}
		applyPut(m, nil, p)
		d.policies = m
		return
	}
	m := make(map[string][]Connection, len(d.conns)+1)
	for k, v := range d.conns {
		m[k] = v
	}
	applyPut(nil, m, p)
	d.conns = m
}

// Policy returns the cached policy with id, or nil and false. The *Policy is never modified
// and may be kept.
func (c *Cache) Policy(id string) (*Policy, bool) {
	c.mu.RLock()
	var p *Policy
	if d := c.byok.d; d != nil {
		p = d.policies[id]
	}
	c.mu.RUnlock()
	return p, p != nil
}

// Connections returns the active connections of the key with keyID (API keys included: for the
// request path only, never to be shown or logged); nil when it has none. The slice is shared:
// callers must not modify it.
func (c *Cache) Connections(keyID string) []Connection {
	c.mu.RLock()
	var cs []Connection
	if d := c.byok.d; d != nil {
		cs = d.conns[keyID]
	}
	c.mu.RUnlock()
	return cs
}

// PutPolicy adds or replaces p in the cache (a copy: p may be reused); the admin API calls it
// after storing a policy, created or changed. A reload that read the store before the write
// does not bring back the older policy.
func (c *Cache) PutPolicy(p *Policy) {
	cp := *p
	cp.Order = slices.Clone(p.Order)
	c.mu.Lock()
	c.putBYOKLocked(byokPut{policy: &cp})
	c.mu.Unlock()
}

// PutConnection adds conn to its key's connections in the cache, or removes it when revoked
// (RevokedAt set; only ID and KeyID are read then); the admin API calls it after storing a
// connection or its revocation. A reload that read the store before the write does not undo
// it: a revoked connection is not used again by this process.
func (c *Cache) PutConnection(conn *Connection) {
	cp := *conn
	cp.Models = slices.Clone(conn.Models)
	c.mu.Lock()
	c.putBYOKLocked(byokPut{conn: &cp})
	c.mu.Unlock()
}

// DeletePolicy removes the policy id from the cache; the admin API calls it after deleting the
// policy from the store. A reload that read the store before the delete does not bring it back.
func (c *Cache) DeletePolicy(id string) {
	c.mu.Lock()
	c.putBYOKLocked(byokPut{policy: &Policy{ID: id}, deleted: true})
	c.mu.Unlock()
}
