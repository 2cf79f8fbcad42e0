package httpauth

import "time"

// cacheKey never holds the token itself, only its SHA-256.
type cacheKey struct {
	token      [32]byte
	path, verb string
}

type cached struct {
	d       Decision
	expires time.Time
}

func (g *Guard) lookup(k cacheKey) (Decision, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.cache[k]
	if !ok || !g.opts.Clock.Now().Before(c.expires) {
		return Decision{}, false
	}
	return c.d, true
}

func (g *Guard) store(k cacheKey, d Decision) {
	ttl := g.opts.DenyTTL
	if d.allowed() {
		ttl = g.opts.AllowTTL
	}
	now := g.opts.Clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.cache) >= g.opts.MaxEntries {
		g.evict(now)
	}
	g.cache[k] = cached{d: d, expires: now.Add(ttl)}
}

// evict drops expired entries, and everything when none had expired: a
// flood of distinct tokens costs reviews, never unbounded memory.
func (g *Guard) evict(now time.Time) {
	for k, c := range g.cache {
		if !now.Before(c.expires) {
			delete(g.cache, k)
		}
	}
	if len(g.cache) >= g.opts.MaxEntries {
		clear(g.cache)
	}
}
