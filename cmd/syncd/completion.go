package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// completionTimeout bounds the requests a shell completion sends: a
// slow or dead API server completes nothing rather than hang the shell.
const completionTimeout = 3 * time.Second

// completeObjects completes NAME arguments with the names of the
// objects of resource in the namespace -n selects (else the context's);
// one arguments only (single), or any number not yet given.
func completeObjects(f *objectFlags, resource schema.GroupVersionResource, single bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if single && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := objectNames(cmd.Context(), f, resource)
		return matching(names, args, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeAppNames completes an app NAME: an app of --config when it is
// given, else an App object.
func completeAppNames(f *appRefFlags) cobra.CompletionFunc {
	objects := completeObjects(&f.objectFlags, v1alpha1.AppResource, true)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if f.config == "" {
			return objects(cmd, args, toComplete)
		}
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return matching(configAppNames(f.config), nil, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeConfigApp completes an --app flag with the apps of the file
// *path names; without a file, with the App objects of objects() when
// the command takes those (plan), else nothing.
func completeConfigApp(path *string, objects func() *objectFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if *path == "" && objects != nil {
			return matching(objectNames(cmd.Context(), objects(), v1alpha1.AppResource), nil, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return matching(configAppNames(*path), nil, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// takesOneName reports whether cmd accepts a single NAME argument only
// (cobra.ExactArgs(1)), so completion stops after it.
func takesOneName(cmd *cobra.Command) bool {
	return cmd.Args != nil && cmd.Args(cmd, []string{"a", "b"}) != nil
}

// completeNamespaces completes -n with the cluster's namespaces.
func completeNamespaces(f *objectFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ns := &objectFlags{kube: f.kube}
		return matching(objectNames(cmd.Context(), ns, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}), nil, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// objectNames lists the names of resource's objects in f's namespace
// (cluster-scoped resources: all); nothing when the cluster cannot be
// asked in time.
func objectNames(ctx context.Context, f *objectFlags, resource schema.GroupVersionResource) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	cl, err := f.kube.connect()
	if err != nil {
		return nil
	}
	var ri dynamic.ResourceInterface = cl.dynamic.Resource(resource)
	if resource.Group == v1alpha1.Group { // syncd's kinds are namespaced
		ns := f.namespace
		if ns == "" {
			ns = cl.namespace
		}
		ri = cl.dynamic.Resource(resource).Namespace(ns)
	}
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var names []string
	for _, item := range list.Items {
		names = append(names, item.GetName())
	}
	return names
}

// configAppNames lists the apps of the config file at path; nothing
// when it does not load.
func configAppNames(path string) []string {
	cfg, err := config.Load(path)
	if err != nil {
		return nil
	}
	var names []string
	for _, a := range cfg.Apps {
		names = append(names, a.Name)
	}
	return names
}

// matching keeps the names that start with prefix and are not in given.
func matching(names, given []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && !slices.Contains(given, n) {
			out = append(out, n)
		}
	}
	return out
}
