package apptree

import (
	"context"
	"fmt"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
)

// Tree is an app's objects by stage and kind.
type Tree struct {
	App string `json:"app"`
	// Revision is the commit last applied and pruned.
	Revision string  `json:"revision,omitempty"`
	Stages   []Stage `json:"stages"`
}

// Stage is the objects of one apply stage, by kind.
type Stage struct {
	Name  string `json:"name"`
	Kinds []Kind `json:"kinds"`
}

// Kind is the objects of one kind.
type Kind struct {
	Group   string   `json:"group,omitempty"`
	Kind    string   `json:"kind"`
	Objects []Object `json:"objects"`
}

// Object is one member of the inventory as the cluster has it now.
type Object struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Health is kstatus's status of the live object (Current,
	// InProgress, Failed, Terminating), or NotFound.
	Health  string `json:"health"`
	Message string `json:"message,omitempty"`
	// Outcome is what syncd last did with the object (an Outcome).
	Outcome Outcome `json:"outcome"`
	// Reason is the guard that kept a prune from deleting it.
	Reason string `json:"reason,omitempty"`
	// YieldedTo names the managers syncd's last apply left fields to
	// (conflict policy yield), sorted; empty when it yielded none.
	YieldedTo []string  `json:"yieldedTo,omitempty"`
	Managers  []Manager `json:"managers,omitempty"`
}

// Outcome is what syncd last did with an object of its inventory.
type Outcome string

const (
	// Applied: syncd's last apply of the object completed.
	Applied Outcome = "applied"
	// Pending: the object is recorded before its apply (the apply did
	// not complete, or is running).
	Pending Outcome = "pending"
	// PruneRefused: the object left Git, and a guard kept the prune
	// from deleting it.
	PruneRefused Outcome = "prune-refused"
)

// Manager is one field manager of a live object.
type Manager struct {
	Name        string       `json:"name"`
	Operation   string       `json:"operation"`
	Subresource string       `json:"subresource,omitempty"`
	Time        *metav1.Time `json:"time,omitempty"`
}

// Getter reads a live object; a NotFound error means it is gone.
type Getter func(ctx context.Context, ref planner.ObjectRef) (*unstructured.Unstructured, error)

// readers bounds the GETs in flight while a tree is built.
const readers = 8

// Build reads every member of inv with get and returns the tree. An
// error other than NotFound fails the build, naming the object.
func Build(ctx context.Context, inv *inventory.Inventory, get Getter) (*Tree, error) {
	members := append([]*inventory.Member{}, inv.Members...)
	sort.SliceStable(members, func(i, j int) bool {
		a, b := members[i], members[j]
		if a.Stage != b.Stage {
			return a.Stage < b.Stage
		}
		return a.Ref().Less(b.Ref())
	})
	objects, err := readAll(ctx, members, get)
	if err != nil {
		return nil, err
	}
	t := &Tree{App: inv.App, Revision: inv.Revision, Stages: []Stage{}}
	for i, m := range members {
		t.add(m, objects[i])
	}
	return t, nil
}

// readAll reads the members' live objects, readers at a time.
func readAll(ctx context.Context, members []*inventory.Member, get Getter) ([]Object, error) {
	out := make([]Object, len(members))
	errs := make([]error, len(members))
	sem := make(chan struct{}, readers)
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = objectOf(ctx, m, get)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// objectOf reads one member and describes it.
func objectOf(ctx context.Context, m *inventory.Member, get Getter) (Object, error) {
	o := Object{Namespace: m.Namespace, Name: m.Name, Outcome: outcomeOf(m), Reason: m.Blocked, YieldedTo: yieldedTo(m)}
	live, err := get(ctx, m.Ref())
	switch {
	case apierrors.IsNotFound(err):
		o.Health = "NotFound"
		return o, nil
	case err != nil:
		return o, fmt.Errorf("read %s: %w", m.Ref(), err)
	}
	o.Health, o.Message = health(live)
	o.Managers = managersOf(live)
	return o, nil
}

// outcomeOf is what syncd last did with the member, from the inventory.
func outcomeOf(m *inventory.Member) Outcome {
	switch {
	case m.Blocked != "":
		return PruneRefused
	case m.ResourceVersion == "" && len(m.Slices) == 0:
		return Pending
	}
	return Applied
}

// yieldedTo names the managers the member's slices yielded fields to, as
// the inventory recorded them after the last apply.
func yieldedTo(m *inventory.Member) []string {
	names := sets.New[string]()
	for _, s := range m.Slices {
		if s.Yield == nil {
			continue
		}
		for _, h := range s.Yield.To {
			names.Insert(h.Manager)
		}
	}
	if names.Len() == 0 {
		return nil
	}
	return sets.List(names)
}

// health is kstatus's status of the live object and its message.
func health(live *unstructured.Unstructured) (string, string) {
	res, err := status.Compute(live)
	if err != nil {
		return string(status.UnknownStatus), err.Error()
	}
	return string(res.Status), res.Message
}

// managersOf lists the live object's field managers in managedFields'
// order.
func managersOf(live *unstructured.Unstructured) []Manager {
	var out []Manager
	for _, e := range live.GetManagedFields() {
		out = append(out, Manager{Name: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource, Time: e.Time})
	}
	return out
}

// add files o under its member's stage and kind, keeping their order.
func (t *Tree) add(m *inventory.Member, o Object) {
	stage := m.Stage.String()
	if n := len(t.Stages); n == 0 || t.Stages[n-1].Name != stage {
		t.Stages = append(t.Stages, Stage{Name: stage})
	}
	s := &t.Stages[len(t.Stages)-1]
	if n := len(s.Kinds); n == 0 || s.Kinds[n-1].Kind != m.Kind || s.Kinds[n-1].Group != m.Group {
		s.Kinds = append(s.Kinds, Kind{Group: m.Group, Kind: m.Kind})
	}
	k := &s.Kinds[len(s.Kinds)-1]
	k.Objects = append(k.Objects, o)
}
