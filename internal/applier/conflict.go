package applier

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Conflict is one field another manager owns with a different value than
// the one an apply wanted to set.
type Conflict struct {
	// Manager is the other field manager.
	Manager string
	// Path is the field in the API server's notation (".data.color").
	Path string
	// Operation is "Apply" or "Update" (Update managers are printed with
	// their API version by the server).
	Operation string
	// Subresource is set when the other manager wrote through a
	// subresource (e.g. "scale").
	Subresource string
	// Time is when the other manager last wrote the field, as the server
	// printed it (RFC 3339), when known.
	Time string
	// App is the other syncd app whose manager Manager is (its managers
	// annotation on the object lists it), when the conflict was decided
	// with the object read; empty for anyone else's manager.
	App string
}

// Error implements error.
func (c Conflict) Error() string {
	s := fmt.Sprintf("%s is owned by %q", c.Path, c.Manager)
	if c.App != "" {
		s += " of app " + c.App
	}
	var how []string
	if c.Operation != "" {
		how = append(how, c.Operation)
	}
	if c.Subresource != "" {
		how = append(how, "subresource "+c.Subresource)
	}
	if c.Time != "" {
		how = append(how, "at "+c.Time)
	}
	if len(how) > 0 {
		s += " (" + strings.Join(how, ", ") + ")"
	}
	return s
}

// Conflicts is the set of conflicts of one apply request, sorted by path
// then manager so that Error is deterministic.
type Conflicts []Conflict

// Error implements error.
func (cs Conflicts) Error() string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Error()
	}
	return "field conflicts: " + strings.Join(parts, "; ")
}

func (cs Conflicts) sort() {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Path != cs[j].Path {
			return cs[i].Path < cs[j].Path
		}
		return cs[i].Manager < cs[j].Manager
	})
}

// conflictMessage matches the cause message the API server writes for a
// field manager conflict: `conflict with "NAME"` followed, for Update
// managers, by ` with subresource "S"`, ` using VERSION` and ` at TIME`.
var conflictMessage = regexp.MustCompile(`^conflict with ("(?:[^"\\]|\\.)*")(?: with subresource ("(?:[^"\\]|\\.)*"))?(?: using (\S+))?(?: at (\S+))?`)

// FieldConflicts returns the field manager conflicts an API error carries,
// or nil when err is not a field conflict. A 409 that is not about field
// ownership (a resourceVersion or "already exists" conflict) returns nil.
func FieldConflicts(err error) Conflicts {
	var cs Conflicts
	if errors.As(err, &cs) {
		return cs
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil
	}
	st := status.Status()
	if st.Code != 409 || st.Details == nil {
		return nil
	}
	var out Conflicts
	for _, cause := range st.Details.Causes {
		if cause.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		c := Conflict{Path: cause.Field, Operation: "Apply"}
		if m := conflictMessage.FindStringSubmatch(cause.Message); m != nil {
			c.Manager, _ = strconv.Unquote(m[1])
			if m[2] != "" {
				c.Subresource, _ = strconv.Unquote(m[2])
			}
			if m[3] != "" {
				c.Operation = "Update"
			}
			c.Time = m[4]
		} else {
			c.Manager = cause.Message
		}
		out = append(out, c)
	}
	out.sort()
	return out
}

// isFieldConflict tells SSA field conflicts apart from other 409s.
func isFieldConflict(err error) bool { return len(FieldConflicts(err)) > 0 }

// isRetryableConflict is a 409 that is not about field ownership: an
// optimistic-lock (resourceVersion) conflict worth retrying.
func isRetryableConflict(err error) bool {
	return apierrors.IsConflict(err) && !isFieldConflict(err)
}

// splitSameValue sorts the conflicts of one apply request into the fields
// whose value the apply would not change and the ones it would. forced is
// what the API server returned for a forced dry run of the same request:
// its value at a conflicting path is what the server would store for the
// declared value (zero values it omits left out, defaults filled in), so a
// field is the same value when forced and live agree there, absent from
// both included. Such a field is no disagreement between the managers:
// taking it changes no value, and the manager dropping it later cannot
// reset anything. fields resolves a conflict's path (the API server's
// notation) to a structured path; a conflict it cannot resolve differs,
// so it is still decided by the policy. Values are read where the server
// stores them (storedValues: a Secret's stringData in its data), so two
// managers' different stringData values differ.
func splitSameValue(cs Conflicts, fields *fieldpath.Set, live, forced *unstructured.Unstructured) (same, differ Conflicts) {
	stored := storedValuesOf(live)
	for _, c := range cs {
		fp := findPath(fields, c.Path)
		if fp == nil {
			differ = append(differ, c)
			continue
		}
		was, inLive := stored.at(live, fp)
		now, inForced := stored.at(forced, fp)
		if inLive == inForced && equality.Semantic.DeepEqual(was, now) {
			same = append(same, c)
			continue
		}
		differ = append(differ, c)
	}
	return same, differ
}
