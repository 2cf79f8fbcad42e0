package webhook

import (
	"container/list"
	"crypto/sha256"
	"net/http"
	"sync"
	"time"
)

// DefaultReplayWindow is how long a delivery is remembered: a second
// delivery with its id, or with its signed body, within it is a replay
// and polls nothing.
const DefaultReplayWindow = time.Hour

// DefaultReplayCapacity bounds how many deliveries are remembered (about
// 100 bytes each); past it the oldest are forgotten first, whatever the
// window. A push every second for an hour fits 3600.
const DefaultReplayCapacity = 10000

// deliveryHeaders are the headers that carry a delivery's id, by
// provider, most specific first. GitLab keeps Idempotency-Key across its
// retries of one delivery (X-Gitlab-Event-UUID too, before GitLab 17.4);
// Gitea sends its own and GitHub's. Idempotency-Key is read for every
// provider, for a proxy or a tool that sets it.
var deliveryHeaders = map[string][]string{
	"github": {"X-GitHub-Delivery", "Idempotency-Key"},
	"gitea":  {"X-Gitea-Delivery", "X-GitHub-Delivery", "Idempotency-Key"},
	"gitlab": {"Idempotency-Key", "X-Gitlab-Event-UUID"},
}

// deliveryKey identifies one delivery: a digest, so a long id costs no
// more memory than a short one.
type deliveryKey [sha256.Size]byte

// deliveryKeys returns the keys a verified delivery is remembered by:
// its id, when its provider's header carries one, and, for a body the
// HMAC covers (GitHub, Gitea), the body itself, since a replay may carry
// a new id header (the signature does not cover the headers) but not a
// new body.
func deliveryKeys(provider string, hdr http.Header, body []byte, signedBody bool) []deliveryKey {
	var keys []deliveryKey
	for _, name := range deliveryHeaders[provider] {
		if id := hdr.Get(name); id != "" {
			keys = append(keys, sha256.Sum256([]byte(provider+"\x00id\x00"+id)))
			break
		}
	}
	if signedBody {
		keys = append(keys, sha256.Sum256(append([]byte(provider+"\x00body\x00"), body...)))
	}
	return keys
}

// replayGuard remembers the deliveries of the last window, at most
// capacity of them, oldest forgotten first. It is safe for concurrent
// use; of two requests of one delivery at once, one is first.
type replayGuard struct {
	window   time.Duration
	capacity int
	now      func() time.Time

	mu    sync.Mutex
	order *list.List // of seenDelivery, oldest at the front
	seen  map[deliveryKey]*list.Element
}

// seenDelivery is one key and when it was first seen.
type seenDelivery struct {
	key deliveryKey
	at  time.Time
}

// newReplayGuard returns a guard remembering deliveries for window, at
// most capacity keys, on the clock now.
func newReplayGuard(window time.Duration, capacity int, now func() time.Time) *replayGuard {
	return &replayGuard{window: window, capacity: max(capacity, 1), now: now, order: list.New(), seen: map[deliveryKey]*list.Element{}}
}

// first reports whether none of keys was seen within the window, and
// remembers every one of them from now either way (a replay does not
// extend the window of the keys already seen).
func (g *replayGuard) first(keys []deliveryKey) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.forgetBefore(now.Add(-g.window))
	isFirst := true
	for _, k := range keys {
		if _, ok := g.seen[k]; ok {
			isFirst = false
			continue
		}
		g.remember(k, now)
	}
	return isFirst
}

// forgetBefore drops the keys first seen before cutoff.
func (g *replayGuard) forgetBefore(cutoff time.Time) {
	for e := g.order.Front(); e != nil && e.Value.(seenDelivery).at.Before(cutoff); e = g.order.Front() {
		g.drop(e)
	}
}

// remember records k at now, dropping the oldest key when full.
func (g *replayGuard) remember(k deliveryKey, now time.Time) {
	if g.order.Len() >= g.capacity {
		g.drop(g.order.Front())
	}
	g.seen[k] = g.order.PushBack(seenDelivery{key: k, at: now})
}

func (g *replayGuard) drop(e *list.Element) {
	delete(g.seen, e.Value.(seenDelivery).key)
	g.order.Remove(e)
}
