package reconcile

import (
	"fmt"
	"path/filepath"
	"strings"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/decrypt"
	"syncd.dev/syncd/internal/planner"
)

// WithDecryption returns tree with the app's SOPS keys
// (apps[].decryption.keysFile) loaded into it, or tree as it is when the
// app decrypts nothing. The keys file is read on every render, so a
// rotated file is used at the next one. A keys file inside the tree the
// app renders is refused: the repository would hold its own keys.
func WithDecryption(app config.App, tree planner.Tree) (planner.Tree, error) {
	d := app.Decryption
	if d == nil {
		return tree, nil
	}
	if inside(tree, d.KeysFile) {
		return tree, fmt.Errorf("app %s: decryption.keysFile %s is inside the repository the app renders: keep the private keys outside Git, on syncd's side", app.Name, d.KeysFile)
	}
	keys, err := decrypt.LoadKeys(d.KeysFile)
	if err != nil {
		return tree, fmt.Errorf("app %s: decryption: %w", app.Name, err)
	}
	tree.Decryption = keys
	return tree, nil
}

// inside reports whether file is in the tree's root (its directory when
// the root is unset), symlinks resolved where they exist.
func inside(tree planner.Tree, file string) bool {
	root := tree.Root
	if root == "" {
		root = tree.Dir
	}
	root, file = resolvedPath(root), resolvedPath(file)
	rel, err := filepath.Rel(root, file)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func resolvedPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
