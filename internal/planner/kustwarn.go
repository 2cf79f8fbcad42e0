package planner

import (
	"context"
	"path"
)

// KustomizeWarnings returns kustomize's warnings for the kustomization t
// renders and every kustomization it reaches: one per deprecated field a
// kustomization file uses, naming the file ("apps/web/kustomization.yaml:
// 'bases' is deprecated. Please use 'resources' instead. ..."), in the
// order the build reaches them. kustomize itself writes these to the
// process's stderr, where they reach no app's report; syncd reports them
// as the app's warnings instead. It returns nil when t is not a
// kustomization or cannot be read (the render reports why).
func KustomizeWarnings(t Tree) []Warning {
	t, rel, err := t.resolved()
	if err != nil || IsChart(t.Dir) || kustomizationFile(t.Dir) == "" {
		return nil
	}
	fsys, err := openRepoFS(t.Root, buildDeadline(context.Background()))
	if err != nil {
		return nil
	}
	defer fsys.Close()
	return inspectKustomizations(fsys, path.Join(repoRoot, rel)).deprecated
}
