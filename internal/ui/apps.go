package ui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/controller"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/redact"
)

var secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// AppRef names an app: an App object (Namespace and Name) or a file app
// of syncd.yaml (Name only).
type AppRef struct {
	Namespace string
	Name      string
}

// File reports whether the app is a syncd.yaml app.
func (r AppRef) File() bool { return r.Namespace == "" }

// Inventory is the name of the app's inventory (its ApplySet parent is
// "syncd-applyset-<Inventory>"): a file app's own name, an App's
// "<namespace>-<name>" (controller.AppName).
func (r AppRef) Inventory() string {
	if r.File() {
		return r.Name
	}
	return controller.AppName(r.Namespace, r.Name)
}

// String is "namespace/name" for an App, the name for a file app.
func (r AppRef) String() string {
	if r.File() {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// AppRow is one app of the Apps page.
type AppRow struct {
	Ref       AppRef
	Cluster   string
	Source    string
	Revision  string
	Ready     string
	Message   string
	Suspended bool
	// Objects, Drift, Conflicts, Overlaps and Handoffs are counts; -1
	// when unknown (a file app's status lives in the daemon's /status).
	Objects   int
	Drift     int
	Conflicts int
	Overlaps  int
	Handoffs  int
	LastSync  *time.Time
	// DriftTime is when the drift count last changed, DriftRevision the
	// revision compared against (an App's status.drift).
	DriftTime     *time.Time
	DriftRevision string
}

// appRows lists the App objects the user may list (every namespace) and
// the file apps whose inventories are in the inventory namespace. A list
// the user's RBAC refuses is a warning, not an error: the page shows what
// may be read.
func (s *Server) appRows(ctx context.Context) ([]AppRow, []string, error) {
	var rows []AppRow
	var warns []string
	apps, err := s.opts.Dynamic.Resource(v1alpha1.AppResource).List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		for i := range apps.Items {
			row, err := appObjectRow(&apps.Items[i])
			if err != nil {
				return nil, nil, err
			}
			rows = append(rows, row)
		}
	case apierrors.IsNotFound(err):
		warns = append(warns, "the App CRD is not installed: only file apps are listed")
	case apierrors.IsForbidden(err):
		warns = append(warns, "App objects: "+redact.Error(err))
	default:
		return nil, nil, fmt.Errorf("list Apps: %w", err)
	}
	files, err := s.fileRows(ctx)
	if err != nil {
		if !apierrors.IsForbidden(err) {
			return nil, nil, err
		}
		warns = append(warns, "file apps: "+redact.Error(err))
	}
	rows = append(rows, files...)
	slices.SortFunc(rows, func(a, b AppRow) int {
		return strings.Compare(a.Ref.Namespace+"/"+a.Ref.Name, b.Ref.Namespace+"/"+b.Ref.Name)
	})
	return rows, warns, nil
}

// appObjectRow is the row of an App object: its status as the controller
// wrote it.
func appObjectRow(u *unstructured.Unstructured) (AppRow, error) {
	app := &v1alpha1.App{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, app); err != nil {
		return AppRow{}, fmt.Errorf("App %s/%s: decode: %w", u.GetNamespace(), u.GetName(), err)
	}
	row := AppRow{
		Ref:       AppRef{Namespace: app.Namespace, Name: app.Name},
		Cluster:   "local",
		Source:    app.Spec.SourceRef.Kind + "/" + app.Spec.SourceRef.Name,
		Revision:  app.Status.LastAppliedRevision,
		Ready:     string(metav1.ConditionUnknown),
		Suspended: app.Spec.Suspend,
		Objects:   -1, Drift: -1, Conflicts: -1, Overlaps: -1, Handoffs: -1,
	}
	if app.Spec.Cluster != nil && app.Spec.Cluster.Name != "" {
		row.Cluster = app.Spec.Cluster.Name
	}
	for _, c := range app.Status.Conditions {
		if c.Type == string(v1alpha1.ConditionReady) {
			row.Ready, row.Message = string(c.Status), redact.Known(c.Message)
		}
	}
	if o := app.Status.Objects; o != nil {
		row.Objects, row.Conflicts, row.Handoffs = o.Total, o.Conflicts, o.HandoffsPending
	}
	if d := app.Status.Drift; d != nil {
		row.Drift, row.Overlaps, row.DriftRevision = d.Findings, d.Overlaps, d.Revision
		if !d.Time.IsZero() {
			t := d.Time.UTC()
			row.DriftTime = &t
		}
	}
	if t := app.Status.LastReconcileTime; t != nil {
		tt := t.UTC()
		row.LastSync = &tt
	}
	return row, nil
}

// fileRows are the file apps: the inventories of the inventory namespace
// that no App object owns.
func (s *Server) fileRows(ctx context.Context) ([]AppRow, error) {
	list, err := s.opts.Dynamic.Resource(secretsResource).Namespace(s.opts.InventoryNamespace).List(ctx, metav1.ListOptions{FieldSelector: "type=" + inventory.SecretType})
	if err != nil {
		return nil, fmt.Errorf("list inventories in namespace %s: %w", s.opts.InventoryNamespace, err)
	}
	var statuses map[string]FileAppStatus
	if s.opts.FileStatus != nil {
		statuses = s.opts.FileStatus.FileStatus()
	}
	var rows []AppRow
	for _, u := range list.Items {
		name, ok := strings.CutPrefix(u.GetName(), inventory.ParentPrefix)
		if !ok || strings.HasPrefix(u.GetAnnotations()[inventory.AnnotationOwner], v1alpha1.KindApp+" ") {
			continue
		}
		inv, err := s.opts.Inventory.Load(ctx, name)
		if err != nil {
			return nil, err
		}
		row := AppRow{
			Ref: AppRef{Name: name}, Cluster: "local", Source: s.fileSource(name), Revision: inv.Revision,
			Ready: "—", Objects: len(inv.Members), Drift: -1, Conflicts: -1, Overlaps: -1, Handoffs: -1,
		}
		fromHistory(&row, inv.History)
		if st, ok := statuses[name]; ok {
			fromStatus(&row, st)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// fileSource is what the Source column shows for a file app: its
// source's name in the syncd.yaml when known, else the file.
func (s *Server) fileSource(app string) string {
	if s.opts.FileSource != nil {
		if name, ok := s.opts.FileSource(app); ok {
			return name + " (syncd.yaml)"
		}
	}
	return "syncd.yaml"
}

// fromHistory fills a file app's row from its last recorded apply: Ready
// (True when it applied everything, False when conflicts or failures held
// objects back) and the last sync. Without history both stay unknown.
func fromHistory(row *AppRow, h []inventory.HistoryEntry) {
	if len(h) == 0 {
		return
	}
	last := h[len(h)-1]
	row.Ready, row.Message = string(metav1.ConditionTrue), "last apply: "+string(last.Result)
	if last.Result != inventory.HistoryApplied {
		row.Ready = string(metav1.ConditionFalse)
	}
	t := last.Time.UTC()
	row.LastSync = &t
}

// appFilter is the Apps page's filter, from its query parameters.
type appFilter struct {
	// Query matches a substring of the app's namespace/name.
	Query string
	// Ready is "True", "False" or "" (any).
	Ready string
	// Drifted keeps only apps with drift, conflicts or overlaps.
	Drifted bool
}

func (f appFilter) keep(r AppRow) bool {
	switch {
	case f.Query != "" && !strings.Contains(r.Ref.String(), f.Query):
		return false
	case f.Ready != "" && r.Ready != f.Ready:
		return false
	case f.Drifted && r.Drift <= 0 && r.Conflicts <= 0 && r.Overlaps <= 0:
		return false
	}
	return true
}

// errNotFound is a page's object or app that does not exist.
var errNotFound = errors.New("not found")
