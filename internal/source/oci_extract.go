package source

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ExtractLimits bound what extracting one artifact may write.
type ExtractLimits struct {
	// Compressed is the largest layer, in bytes, that is downloaded.
	Compressed int64
	// Size is the largest total of file contents, in bytes, once
	// decompressed.
	Size int64
	// Files is the largest number of entries (files, directories and
	// symlinks).
	Files int
}

// DefaultExtractLimits are the limits of every OCI source: 100 MiB
// compressed, 256 MiB of files, 10000 entries.
var DefaultExtractLimits = ExtractLimits{Compressed: 100 << 20, Size: 256 << 20, Files: 10000}

// ExtractOptions tune extractTarGz.
type ExtractOptions struct {
	Limits ExtractLimits
	// StripFirst drops the first path component of every entry (a Helm
	// chart archive holds its files below <chart>/); every entry must
	// then share it.
	StripFirst bool
}

// ArchiveError is an artifact refused for what it holds: an entry that
// would leave the directory, a symlink out of it, a device or other
// special file, or a limit exceeded. Entry is the entry's name as the
// archive spells it ("" for the archive as a whole).
type ArchiveError struct {
	Entry  string
	Reason string
}

// Error names the entry and why it is refused.
func (e *ArchiveError) Error() string {
	if e.Entry == "" {
		return "artifact refused: " + e.Reason
	}
	return fmt.Sprintf("artifact refused: entry %q: %s", e.Entry, e.Reason)
}

// extractor writes one archive's entries below root.
type extractor struct {
	root    string
	opts    ExtractOptions
	top     string // the stripped first component, once seen
	files   int
	written int64
	seen    map[string]bool
}

// extractTarGz extracts a tar+gzip stream into root (an empty directory).
// It never writes outside root: entries are relative paths without "..",
// parents are real directories it made, and after the last entry every
// symlink must resolve inside root. Regular files, directories and
// symlinks are extracted; any other entry type refuses the archive, as
// does crossing a limit. Refusals are *ArchiveError; the caller removes
// root on error. The whole compressed stream is read, so a digest check
// wrapped around it runs.
func extractTarGz(r io.Reader, root string, opts ExtractOptions) error {
	counted := &limitedReader{r: r, left: opts.Limits.Compressed}
	zr, err := gzip.NewReader(counted)
	if err != nil {
		return &ArchiveError{Reason: "the layer is not gzip-compressed: " + err.Error()}
	}
	x := &extractor{root: root, opts: opts, seen: map[string]bool{}}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return x.readError(err)
		}
		if err := x.entry(h, tr); err != nil {
			return err
		}
	}
	if _, err := io.Copy(io.Discard, counted); err != nil {
		return x.readError(err)
	}
	return x.checkSymlinks()
}

// readError reports a failure to read the stream: a limit crossed is an
// *ArchiveError, anything else (a broken download, a digest mismatch)
// stays as it is.
func (x *extractor) readError(err error) error {
	if errors.Is(err, errCompressedLimit) {
		return &ArchiveError{Reason: fmt.Sprintf("the compressed layer is over the %d-byte limit", x.opts.Limits.Compressed)}
	}
	if errors.Is(err, tar.ErrHeader) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) {
		return &ArchiveError{Reason: "the layer is not a valid tar+gzip archive: " + err.Error()}
	}
	return err
}

// entry extracts one archive entry.
func (x *extractor) entry(h *tar.Header, r io.Reader) error {
	if h.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	rel, skip, err := x.relName(h.Name)
	if err != nil || skip {
		return err
	}
	x.files++
	if x.files > x.opts.Limits.Files {
		return &ArchiveError{Entry: h.Name, Reason: fmt.Sprintf("the artifact has more than %d entries", x.opts.Limits.Files)}
	}
	if x.seen[rel] && h.Typeflag != tar.TypeDir {
		return &ArchiveError{Entry: h.Name, Reason: "appears twice in the archive"}
	}
	x.seen[rel] = true
	if err := x.mkdirs(h.Name, path.Dir(rel)); err != nil {
		return err
	}
	full := filepath.Join(x.root, filepath.FromSlash(rel))
	switch h.Typeflag {
	case tar.TypeDir:
		return x.mkdir(h.Name, full)
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archivers write TypeRegA
		return x.file(h, full, r)
	case tar.TypeSymlink:
		return x.symlink(h, rel, full)
	default:
		return &ArchiveError{Entry: h.Name, Reason: fmt.Sprintf("is a %s; only regular files, directories and symlinks are extracted", typeName(h.Typeflag))}
	}
}

// relName is the entry's slash-separated path below root (the first
// component stripped when asked); skip is set for the stripped top
// directory itself.
func (x *extractor) relName(raw string) (rel string, skip bool, err error) {
	clean := path.Clean(strings.TrimPrefix(raw, "./"))
	if raw == "" || path.IsAbs(raw) || !filepath.IsLocal(filepath.FromSlash(clean)) || hasDotDot(raw) {
		return "", false, &ArchiveError{Entry: raw, Reason: "is not a relative path inside the artifact (absolute, or with \"..\")"}
	}
	if clean == "." {
		return "", true, nil
	}
	if !x.opts.StripFirst {
		return clean, false, nil
	}
	first, rest, _ := strings.Cut(clean, "/")
	if x.top == "" {
		x.top = first
	}
	if first != x.top {
		return "", false, &ArchiveError{Entry: raw, Reason: fmt.Sprintf("is not below %s/, the chart's directory", x.top)}
	}
	return rest, rest == "", nil
}

// hasDotDot reports whether a slash-separated name has a ".." component.
func hasDotDot(name string) bool {
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// mkdirs makes the parents of an entry, each a real directory: a parent
// that exists as a symlink or file refuses the archive (writing through a
// symlink could leave root).
func (x *extractor) mkdirs(entry, relDir string) error {
	if relDir == "." {
		return nil
	}
	cur := x.root
	for _, part := range strings.Split(relDir, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(cur, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case !fi.IsDir():
			return &ArchiveError{Entry: entry, Reason: "a parent of it is a symlink or a file in the archive"}
		}
	}
	return nil
}

// mkdir makes a directory entry (an existing directory is fine).
func (x *extractor) mkdir(entry, full string) error {
	fi, err := os.Lstat(full)
	if err == nil && !fi.IsDir() {
		return &ArchiveError{Entry: entry, Reason: "is a directory and a file or symlink in the archive"}
	}
	if err == nil {
		return nil
	}
	return os.Mkdir(full, 0o755)
}

// file writes a regular file (mode 0644, or 0755 when any execute bit is
// set), counting its bytes against the size limit.
func (x *extractor) file(h *tar.Header, full string, r io.Reader) error {
	if h.Size < 0 || h.Size > x.opts.Limits.Size-x.written {
		return &ArchiveError{Entry: h.Name, Reason: fmt.Sprintf("the artifact's files are over the %d-byte limit once decompressed", x.opts.Limits.Size)}
	}
	perm := os.FileMode(0o644)
	if h.Mode&0o111 != 0 {
		perm = 0o755
	}
	// O_EXCL: never write through an existing entry (or a symlink).
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, h.Size))
	x.written += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return x.readError(err)
	}
	return nil
}

// symlink makes a symlink whose target is relative and, read from the
// link's directory, stays inside root (checkSymlinks checks chains once
// every entry is written).
func (x *extractor) symlink(h *tar.Header, rel, full string) error {
	t := h.Linkname
	if t == "" || path.IsAbs(t) || filepath.IsAbs(t) || !filepath.IsLocal(filepath.FromSlash(path.Join(path.Dir(rel), t))) {
		return &ArchiveError{Entry: h.Name, Reason: fmt.Sprintf("is a symlink to %q, outside the artifact", t)}
	}
	return os.Symlink(filepath.FromSlash(t), full)
}

// checkSymlinks resolves every symlink under root: each must lead to an
// existing file or directory inside root.
func (x *extractor) checkSymlinks() error {
	realRoot, err := filepath.EvalSymlinks(x.root)
	if err != nil {
		return err
	}
	return filepath.WalkDir(x.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		rel, _ := filepath.Rel(x.root, p)
		to, rerr := filepath.EvalSymlinks(p)
		if rerr != nil || !within(realRoot, to) {
			return &ArchiveError{Entry: filepath.ToSlash(rel), Reason: "is a symlink that does not resolve to a file inside the artifact"}
		}
		return nil
	})
}

// typeName names a tar entry type in errors.
func typeName(t byte) string {
	switch t {
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("tar entry of type %q", t)
}

// errCompressedLimit is what limitedReader fails with past its limit.
var errCompressedLimit = errors.New("compressed limit exceeded")

// limitedReader fails once more than left bytes were read.
type limitedReader struct {
	r    io.Reader
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, errCompressedLimit
	}
	return n, err
}
