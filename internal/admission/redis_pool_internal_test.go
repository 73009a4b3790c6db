package admission

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// OpenRedis sizes go-redis's pool for a gateway: 256 connections and 16 kept idle by default
// (go-redis's own default, 10 per GOMAXPROCS, is 20 on two cores: 300 concurrent requests
// queued behind it past the 100 ms timeout and metered ones were refused), the configured
// values when given, and the pool wait bounded by Timeout. It does not dial.
func TestOpenRedisPool(t *testing.T) {
	for _, tc := range []struct {
		o                RedisOptions
		size, idle       int
		timeout, leaseTT time.Duration
		prefix           string
	}{
		{RedisOptions{}, DefaultRedisPoolSize, DefaultRedisMinIdle, DefaultRedisTimeout, DefaultLeaseTTL, DefaultRedisPrefix},
		{RedisOptions{PoolSize: 512, MinIdleConns: 32, Timeout: 250 * time.Millisecond, LeaseTTL: 10 * time.Second, Prefix: "gw1:"},
			512, 32, 250 * time.Millisecond, 10 * time.Second, "gw1:"},
		{RedisOptions{PoolSize: 8}, 8, 8, DefaultRedisTimeout, DefaultLeaseTTL, DefaultRedisPrefix}, // idle at most the pool
	} {
		r, err := OpenRedis("redis://127.0.0.1:1/0", tc.o)
		if err != nil {
			t.Fatal(err)
		}
		opt := r.rdb.(*redis.Client).Options()
		if opt.PoolSize != tc.size || opt.MinIdleConns != tc.idle || opt.PoolTimeout != tc.timeout {
			t.Errorf("%+v: pool %d, idle %d, pool timeout %s; want %d, %d, %s", tc.o, opt.PoolSize, opt.MinIdleConns, opt.PoolTimeout, tc.size, tc.idle, tc.timeout)
		}
		if o := r.Options(); o.LeaseTTL != tc.leaseTT || o.Prefix != tc.prefix || o.Timeout != tc.timeout {
			t.Errorf("%+v: lease %s, prefix %q, timeout %s", tc.o, o.LeaseTTL, o.Prefix, o.Timeout)
		}
		_ = r.Close()
	}
}
