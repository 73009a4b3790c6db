package admission

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pauseMsg is one provider pause: the provider's pause scope and when the pause ends.
type pauseMsg struct {
	provider string
	until    time.Time
}

// PublishPause shares a provider pause (an upstream 429's retry-after, R-CIRCUIT-4) with every
// replica. It never blocks: the pause is queued for SharePauses, and dropped when 256 are
// already queued (the provider's next 429 pauses it again).
func (r *Redis) PublishPause(provider string, until time.Time) {
	select {
	case r.pauses <- pauseMsg{provider, until}:
	default:
	}
}

// pauseChannel is the pub/sub channel of pauses; pauseKey the key of a provider's pause in force
// (its end in Unix ms, expiring with it), read by a replica when it subscribes.
func (r *Redis) pauseChannel() string            { return r.o.Prefix + "pauses" }
func (r *Redis) pauseKey(provider string) string { return r.o.Prefix + "p:" + provider }

// SharePauses runs until ctx is done: it publishes this replica's pauses (PublishPause; a key
// with the pause's end and a PUBLISH, in one pipeline) and hands other replicas' pauses to
// apply (circuit.Set.PauseUntil): those published while it is subscribed, and, each time it
// (re)subscribes, those in force. Routing reads only the local copy apply keeps: no request
// waits on Redis for a pause. It returns nil when ctx is done.
func (r *Redis) SharePauses(ctx context.Context, apply func(provider string, until time.Time)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-r.pauses:
				r.publishPause(ctx, m)
			}
		}
	})
	for ctx.Err() == nil {
		r.subscribePauses(ctx, apply)
		t := time.NewTimer(redisRetryInterval)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

func (r *Redis) publishPause(ctx context.Context, m pauseMsg) {
	d := m.until.Sub(r.o.Now())
	if d <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	ms := strconv.FormatInt(m.until.UnixMilli(), 10)
	p := r.rdb.Pipeline()
	p.Set(ctx, r.pauseKey(m.provider), r.replica+" "+ms, d) // the publisher, so that its own scan skips it
	p.Publish(ctx, r.pauseChannel(), r.replica+" "+ms+" "+m.provider)
	if _, err := p.Exec(ctx); err != nil {
		r.logBackground("sharing a provider pause", err)
	}
}

// subscribePauses subscribes, applies the pauses in force, then applies each pause published
// by another replica until the subscription fails or ctx is done.
func (r *Redis) subscribePauses(ctx context.Context, apply func(string, time.Time)) {
	ps := r.rdb.Subscribe(ctx, r.pauseChannel())
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		if ctx.Err() == nil {
			r.logBackground("sharing a provider pause", err)
		}
		return
	}
	iter := r.rdb.Scan(ctx, 0, r.o.Prefix+"p:*", 256).Iterator()
	for iter.Next(ctx) {
		if from, ms, ok := r.pauseInForce(ctx, iter.Val()); ok && from != r.replica {
			apply(strings.TrimPrefix(iter.Val(), r.o.Prefix+"p:"), time.UnixMilli(ms))
		}
	}
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			replica, rest, _ := strings.Cut(m.Payload, " ")
			ms, provider, ok := strings.Cut(rest, " ")
			v, err := strconv.ParseInt(ms, 10, 64)
			if !ok || err != nil || replica == r.replica {
				continue
			}
			apply(provider, time.UnixMilli(v))
		}
	}
}

// pauseInForce reads a pause key's value, "REPLICA UNIXMS" (the replica that published it and
// when the pause ends), or a bare "UNIXMS" as an older replica wrote it (publisher unknown).
// A replica's scan of the pauses in force skips its own: it already applied them, and a pause
// it published must not come back to it (the same rule as the pub/sub channel's).
func (r *Redis) pauseInForce(ctx context.Context, key string) (from string, ms int64, ok bool) {
	v, err := r.rdb.Get(ctx, key).Result()
	if err != nil {
		return "", 0, false
	}
	if i := strings.LastIndexByte(v, ' '); i >= 0 {
		from, v = v[:i], v[i+1:]
	}
	ms, err = strconv.ParseInt(v, 10, 64)
	return from, ms, err == nil
}
