package inventory

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// SecretType is the type of the parent Secrets syncd writes.
const SecretType = "syncd.dev/applyset"

// StoreManager is the field manager syncd writes parent Secrets as.
const StoreManager = "syncd-inventory"

var secrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// store reads and writes the parent Secrets of one syncd namespace.
type store struct {
	dyn       dynamic.Interface
	namespace string
	tooling   string
}

// loaded is an inventory as read, with what is needed to tell whether a
// save would change anything.
type loaded struct {
	inv    *Inventory
	exists bool
	blob   []byte
	ann    map[string]string
}

func (s *store) where(app string) string {
	return fmt.Sprintf("inventory of app %s (Secret %s/%s)", app, s.namespace, ParentName(app))
}

// load reads an app's inventory; a missing parent is an empty inventory.
func (s *store) load(ctx context.Context, app string) (*loaded, error) {
	id := AppID(app, s.namespace)
	u, err := s.dyn.Resource(secrets).Namespace(s.namespace).Get(ctx, ParentName(app), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &loaded{inv: &Inventory{App: app, ID: id, Version: FormatVersion}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", s.where(app), err)
	}
	ann := u.GetAnnotations()
	tool, ok := ann[AnnotationTooling]
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: exists without the %s annotation, so it is not syncd's; rename the app or delete that Secret", s.where(app), AnnotationTooling)
	case toolName(tool) != ToolName:
		return nil, fmt.Errorf("%s: the ApplySet is managed by %q, not %s; syncd does not change another tool's ApplySet: rename the app or hand the objects over by deleting that Secret", s.where(app), tool, ToolName)
	}
	if got := u.GetLabels()[LabelID]; got != id {
		return nil, fmt.Errorf("%s: label %s is %q, want %q; fix or delete the label (syncd restores it)", s.where(app), LabelID, got, id)
	}
	l := &loaded{exists: true, ann: ann}
	enc, _, _ := unstructured.NestedString(u.Object, "data", DataKey)
	if enc == "" {
		l.inv = &Inventory{App: app, ID: id, Version: FormatVersion}
		return l, nil
	}
	if l.blob, err = base64.StdEncoding.DecodeString(enc); err != nil {
		return nil, fmt.Errorf("%s: data[%s] is not base64: %w", s.where(app), DataKey, err)
	}
	if l.inv, err = Decode(s.where(app), l.blob); err != nil {
		return nil, err
	}
	l.inv.App, l.inv.ID = app, id
	return l, nil
}

// save writes inv unless it equals what prev holds; it reports whether
// it wrote.
func (s *store) save(ctx context.Context, prev *loaded, inv *Inventory) (bool, error) {
	inv.Sort()
	blob, err := inv.Encode()
	if err != nil {
		return false, err
	}
	ann := map[string]string{
		AnnotationTooling:    s.tooling,
		AnnotationGroupKinds: inv.GroupKinds(),
	}
	if ns := inv.Namespaces(s.namespace); ns != "" {
		ann[AnnotationNamespaces] = ns
	}
	if prev != nil && prev.exists && bytes.Equal(prev.blob, blob) && sameAnnotations(prev.ann, ann) {
		return false, nil
	}
	annAny := map[string]any{}
	for k, v := range ann {
		annAny[k] = v
	}
	obj := map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":        ParentName(inv.App),
			"namespace":   s.namespace,
			"labels":      map[string]any{LabelID: inv.ID},
			"annotations": annAny,
		},
		"type": SecretType,
		"data": map[string]any{DataKey: base64.StdEncoding.EncodeToString(blob)},
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return false, err
	}
	force := true
	if _, err := s.dyn.Resource(secrets).Namespace(s.namespace).Patch(ctx, ParentName(inv.App), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: StoreManager, Force: &force}); err != nil {
		return false, fmt.Errorf("%s: write: %w", s.where(inv.App), err)
	}
	if prev != nil {
		prev.exists, prev.blob, prev.ann = true, blob, ann
	}
	return true, nil
}

func sameAnnotations(live, want map[string]string) bool {
	for k, v := range want {
		if live[k] != v {
			return false
		}
	}
	_, liveNS := live[AnnotationNamespaces]
	_, wantNS := want[AnnotationNamespaces]
	return liveNS == wantNS
}

// toolName returns the tool part of "<tool>/<version>".
func toolName(tooling string) string {
	for i := len(tooling) - 1; i >= 0; i-- {
		if tooling[i] == '/' {
			return tooling[:i]
		}
	}
	return tooling
}
