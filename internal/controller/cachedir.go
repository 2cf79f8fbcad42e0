package controller

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// appCaches names the Apps' Git cache directories below root: each is
// root/<hash>, the hash an HMAC-SHA-256 of the App's namespace, name and
// UID under a random key kept in root/.key (made on first use, mode
// 0600). Nobody who does not hold the key, an App or a reader of Apps,
// can name another App's clone, and the clone is reused across restarts
// while the key and the App remain; a recreated App (a new UID) clones
// anew.
type appCaches struct {
	root string

	once sync.Once
	key  []byte
	err  error
}

// keyFile is the name of the key's file below root.
const keyFile = ".key"

// keyLen is the length of the key, in bytes.
const keyLen = 32

// dir is the Git cache directory of the App namespace/name of that UID.
func (a *appCaches) dir(namespace, name string, uid types.UID) (string, error) {
	a.once.Do(func() { a.key, a.err = loadOrMakeKey(filepath.Join(a.root, keyFile)) })
	if a.err != nil {
		return "", a.err
	}
	mac := hmac.New(sha256.New, a.key)
	// The parts are joined by a byte no name or UID holds, so that no two
	// Apps hash the same string.
	fmt.Fprintf(mac, "%s\x00%s\x00%s", namespace, name, uid)
	return filepath.Join(a.root, hex.EncodeToString(mac.Sum(nil))[:32]), nil
}

// sweep removes the entries below root that are not the key and not one
// of keep (the directories of the Apps that exist): the caches of Apps
// deleted while syncd did not run, and those of the layout before the
// hashed names (root/<namespace>/<name>), which other Apps could name.
func (a *appCaches) sweep(keep map[string]bool) error {
	entries, err := os.ReadDir(a.root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(a.root, e.Name())
		if e.Name() == keyFile || keep[p] {
			continue
		}
		errs = append(errs, os.RemoveAll(p))
	}
	return errors.Join(errs...)
}

// loadOrMakeKey reads the key at path, or makes one there. A new key is
// written to a temporary file and linked into place, so a concurrent
// maker or a crash never leaves a partial key.
func loadOrMakeKey(path string) ([]byte, error) {
	if key, err := readKey(path); !errors.Is(err, os.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("Git cache key: %w", err)
	}
	key := make([]byte, keyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("Git cache key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), keyFile+"-*")
	if err != nil {
		return nil, fmt.Errorf("Git cache key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("Git cache key %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("Git cache key %s: %w", tmp.Name(), err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("Git cache key %s: %w", path, err)
	}
	return readKey(path)
}

// readKey reads a key file; one of the wrong length is an error that
// says what to do.
func readKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(key) != keyLen {
		return nil, fmt.Errorf("Git cache key %s: %d bytes, want %d; delete it (the Apps' Git caches are then cloned anew)", path, len(key), keyLen)
	}
	return key, nil
}
