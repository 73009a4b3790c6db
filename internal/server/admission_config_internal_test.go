package server

import (
	"testing"
	"time"

	"github.com/switchyard-gw/switchyard/internal/admission"
	"github.com/switchyard-gw/switchyard/internal/config"
)

// admission.redis reaches the Redis store: timeout, lease TTL, key prefix and pool; omitted
// fields are the store's defaults.
func TestNewAdmissionRedisOptions(t *testing.T) {
	c := config.Admission{URL: "redis://127.0.0.1:1/0", Redis: config.RedisAdmission{Timeout: config.Duration(250 * time.Millisecond),
		LeaseTTL: config.Duration(10 * time.Second), Prefix: "gw1:", PoolSize: 64, MinIdleConns: 4}}
	st, err := newAdmission(c, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := st.(*admission.Redis)
	defer r.Close()
	if o := r.Options(); o.Timeout != 250*time.Millisecond || o.LeaseTTL != 10*time.Second || o.Prefix != "gw1:" || o.PoolSize != 64 || o.MinIdleConns != 4 {
		t.Fatalf("options %+v", o)
	}
	st2, err := newAdmission(config.Admission{URL: "redis://127.0.0.1:1/0"}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2 := st2.(*admission.Redis)
	defer r2.Close()
	if o := r2.Options(); o.Timeout != admission.DefaultRedisTimeout || o.LeaseTTL != admission.DefaultLeaseTTL ||
		o.Prefix != admission.DefaultRedisPrefix || o.PoolSize != admission.DefaultRedisPoolSize {
		t.Fatalf("defaults %+v", o)
	}
}
