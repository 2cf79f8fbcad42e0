package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/appedit"
)

// cliManager is the field manager of the edits the App commands make
// (reconcile, suspend, resume): its own name, so managedFields tell a
// person's `syncd suspend` from the controller's status writes
// (syncd-controller) and from whoever applies the App itself.
const cliManager = appedit.Manager

// objectFlags are the flags of the commands that read or edit App and
// GitSource objects: the cluster and the namespace.
type objectFlags struct {
	kube      kubeFlags
	namespace string
}

func (o *objectFlags) register(fs *pflag.FlagSet) {
	o.kube.register(fs)
	fs.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the objects (default: the kubeconfig context's, or the pod's in a cluster)")
}

// completions completes cmd's NAME with the objects of resource and -n
// with the cluster's namespaces.
func (o *objectFlags) completions(cmd *cobra.Command, resource schema.GroupVersionResource) {
	cmd.ValidArgsFunction = completeObjects(o, resource, takesOneName(cmd))
	_ = cmd.RegisterFlagCompletionFunc("namespace", completeNamespaces(o))
}

// appCluster is a connection to a cluster that serves the App and
// GitSource CRDs, and the namespace a command works in.
type appCluster struct {
	*cluster
	namespace string
}

// connectApps connects as the kube flags say and checks that the CRDs
// are installed: without them every request would fail with a bare 404.
func (o *objectFlags) connectApps() (*appCluster, error) {
	cl, err := o.kube.connect()
	if err != nil {
		return nil, err
	}
	return appsOn(cl, o.namespace)
}

// appsOn checks that the cluster serves the CRDs; the namespace is ns,
// else the kubeconfig context's.
func appsOn(cl *cluster, ns string) (*appCluster, error) {
	served, err := appObjectsServed(cl)
	if err != nil {
		return nil, err
	}
	if !served {
		return nil, errCRDsMissing
	}
	if ns == "" {
		ns = cl.namespace
	}
	return &appCluster{cluster: cl, namespace: ns}, nil
}

// errCRDsMissing says what to do when the API server does not serve
// syncd.dev/v1alpha1.
var errCRDsMissing = fmt.Errorf("the API server does not serve %s: syncd's CRDs are not installed in this cluster (App, GitSource, HelmSource, OCISource); syncd install installs them with the rest of syncd (syncd check says what is missing)", v1alpha1.GroupVersion)

// resource is the dynamic client of one kind in a namespace ("" for all
// namespaces).
func (a *appCluster) resource(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return a.dynamic.Resource(gvr)
	}
	return a.dynamic.Resource(gvr).Namespace(namespace)
}

// getApp reads one App; a missing App is an error naming it and how to
// list the others.
func (a *appCluster) getApp(ctx context.Context, namespace, name string) (*v1alpha1.App, error) {
	u, err := a.resource(v1alpha1.AppResource, namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("App %s/%s not found; syncd get apps -n %s lists the Apps of that namespace", namespace, name, namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("App %s/%s: get: %w", namespace, name, err)
	}
	return decodeApp(u)
}

// getSource reads one GitSource.
func (a *appCluster) getSource(ctx context.Context, namespace, name string) (*v1alpha1.GitSource, error) {
	u, err := a.resource(v1alpha1.GitSourceResource, namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("GitSource %s/%s not found; create it, or give the checkout with --path", namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("GitSource %s/%s: get: %w", namespace, name, err)
	}
	return decodeSource(u)
}

// decodeApp converts an App read through the dynamic client.
func decodeApp(u *unstructured.Unstructured) (*v1alpha1.App, error) {
	app := &v1alpha1.App{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, app); err != nil {
		return nil, fmt.Errorf("App %s/%s: decode: %w", u.GetNamespace(), u.GetName(), err)
	}
	return app, nil
}

// decodeSource converts a GitSource read through the dynamic client.
func decodeSource(u *unstructured.Unstructured) (*v1alpha1.GitSource, error) {
	src := &v1alpha1.GitSource{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, src); err != nil {
		return nil, fmt.Errorf("GitSource %s/%s: decode: %w", u.GetNamespace(), u.GetName(), err)
	}
	return src, nil
}

// readyCondition returns the Ready condition of a status, or nil.
func readyCondition(conds []metav1.Condition) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == string(v1alpha1.ConditionReady) {
			return &conds[i]
		}
	}
	return nil
}
