package syncdrun

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/restmapper"
)

// cachingMapper remembers RESTMapping answers per group, kind and
// versions (the discovery mapper rebuilds its priority mapper on every
// call); Reset forgets them with the discovery cache.
type cachingMapper struct {
	*restmapper.DeferredDiscoveryRESTMapper
	mu    sync.Mutex
	cache map[string]*meta.RESTMapping
}

func (m *cachingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := gk.String() + "/" + strings.Join(versions, ",")
	m.mu.Lock()
	r, ok := m.cache[key]
	m.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := m.DeferredDiscoveryRESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.cache[key] = r
	m.mu.Unlock()
	return r, nil
}

func (m *cachingMapper) Reset() {
	m.mu.Lock()
	m.cache = map[string]*meta.RESTMapping{}
	m.mu.Unlock()
	m.DeferredDiscoveryRESTMapper.Reset()
}
