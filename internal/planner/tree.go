package planner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// MaxFileSize is the largest file Render and ReadDir read, 8 MiB. Larger
// files are refused before they are read, so a huge file in Git cannot
// exhaust the daemon's memory. (etcd's default request limit is 1.5 MiB per
// object, so no legitimate manifest file comes close.)
const MaxFileSize = 8 << 20

// MaxTreeSize is the most one kustomize build may read in total, 64 MiB.
const MaxTreeSize = 64 << 20

// treeFile is one regular file found below a directory.
type treeFile struct {
	rel  string // slash-separated path relative to the directory
	path string // path to open (the symlink's target when it is one)
	size int64
}

// read reads the file whole, refusing it when it grew past MaxFileSize
// since it was listed.
func (f treeFile) read() ([]byte, error) {
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, tooBig(len(data))
	}
	return data, nil
}

func tooBig(size int) error {
	return fmt.Errorf("file is larger than the %d MiB limit (%d bytes): split it into smaller files", MaxFileSize>>20, size)
}

// walkTree lists the regular files below dir in lexical order. Directories
// whose name starts with "." are skipped. Symlinks are resolved: one that
// leads out of dir is an error; one to a directory is reported as an error
// too (it is not followed, and silently skipping it would drop manifests).
// Files over MaxFileSize are errors. Problems with single files come back as
// ManifestErrors; a directory that cannot be read at all is err.
func walkTree(dir string) (files []treeFile, errs ManifestErrors, err error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: read manifests: %w", dir, err)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: read manifests: %w", dir, err)
	}
	info, err := os.Stat(root)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: read manifests: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("%s: read manifests: not a directory", dir)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, relErr := filepath.Rel(root, path)
		if relErr != nil {
			return relErr
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		target := path
		if d.Type()&fs.ModeSymlink != 0 {
			resolved, err := filepath.EvalSymlinks(path)
			if err != nil {
				errs = append(errs, &ManifestError{File: rel, Err: fmt.Errorf("broken symlink: %w", err)})
				return nil
			}
			if inside, _ := within(root, resolved); !inside {
				errs = append(errs, &ManifestError{File: rel, Err: errors.New("symlink leads out of the app directory: copy the file into the directory instead")})
				return nil
			}
			target = resolved
		}
		info, err := os.Stat(target)
		if err != nil {
			errs = append(errs, &ManifestError{File: rel, Err: err})
			return nil
		}
		switch {
		case info.IsDir():
			errs = append(errs, &ManifestError{File: rel, Err: errors.New("symlink to a directory is not followed: move the files or reference the directory by its real path")})
		case !info.Mode().IsRegular():
			// Sockets, devices and pipes are not manifests; skip them.
		case info.Size() > MaxFileSize:
			errs = append(errs, &ManifestError{File: rel, Err: tooBig(int(info.Size()))})
		default:
			files = append(files, treeFile{rel: rel, path: target, size: info.Size()})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: read manifests: %w", dir, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, errs, nil
}

// within reports whether path is root or below it (both absolute and
// clean).
func within(root, path string) (bool, error) {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false, err
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, "../")), nil
}
