package planner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"syncd.dev/syncd/internal/egress"
)

// base is a small base the escape and remote tests put their overlay on.
var base = map[string]string{
	"base/kustomization.yaml": "resources: [cm.yaml]\n",
	"base/cm.yaml":            configMap,
}

func withFiles(extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// renderRepo renders app inside the repository written from files.
func renderRepo(t *testing.T, files map[string]string, app string) ([]Manifest, string, error) {
	t.Helper()
	root := writeTree(t, files)
	ms, err := Render(context.Background(), Tree{Root: root, Dir: filepath.Join(root, app)})
	return ms, root, err
}

// TestRenderEscapes checks that nothing outside the repository root is
// read, whichever way a kustomization points there, and that the refusal
// names the kustomization and the field.
func TestRenderEscapes(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\nstringData: {password: hunter2}\n", "dir/kustomization.yaml": "resources: [../secret.yaml]\n"})
	const k = "overlays/prod/kustomization.yaml"
	tests := map[string]struct {
		files map[string]string
		want  string
	}{
		"absolute resource": {
			files: map[string]string{k: "resources: [../../base, " + filepath.Join(outside, "secret.yaml") + "]\n"},
			want:  k + `: resources[1]: "` + filepath.Join(outside, "secret.yaml") + `" is an absolute path`,
		},
		".. past the root": {
			files: map[string]string{k: "resources: [../../base, ../../../secret.yaml]\n"},
			want:  k + `: resources[1]: "../../../secret.yaml" leaves the repository`,
		},
		".. past the root in a patch": {
			files: map[string]string{k: "resources: [../../base]\npatches:\n- path: ../../../../etc/patch.yaml\n"},
			want:  k + `: patches[0].path: "../../../../etc/patch.yaml" leaves the repository`,
		},
		".. past the root in a generator file key=path": {
			files: map[string]string{k: "resources: [../../base]\nconfigMapGenerator:\n- name: c\n  files: [ok.txt, pw=../../../passwd]\n", "overlays/prod/ok.txt": "x"},
			want:  k + `: configMapGenerator[0].files[1]: "pw=../../../passwd" leaves the repository`,
		},
		"absolute env file": {
			files: map[string]string{k: "resources: [../../base]\nsecretGenerator:\n- name: s\n  envs: [/etc/environment]\n"},
			want:  k + `: secretGenerator[0].envs[0]: "/etc/environment" is an absolute path`,
		},
		"symlinked file out of the repository": {
			files: map[string]string{k: "resources: [../../base, leak.yaml]\n", "overlays/prod/leak.yaml": "symlink:" + filepath.Join(outside, "secret.yaml")},
			want:  k + `: resources[1]: "leak.yaml" leads out of the repository through a symlink`,
		},
		"symlinked directory out of the repository": {
			files: map[string]string{k: "resources: [../../base, vendor]\n", "overlays/prod/vendor": "symlink:" + filepath.Join(outside, "dir")},
			want:  k + `: resources[1]: "vendor" leads out of the repository through a symlink`,
		},
		"relative symlink out, in a base": {
			files: map[string]string{k: "resources: [../../base]\n", "base/kustomization.yaml": "resources: [cm.yaml, leak.yaml]\n", "base/leak.yaml": "symlink:../../" + filepath.Base(outside) + "/secret.yaml"},
			want:  `base/kustomization.yaml: resources[1]: "leak.yaml" leads out of the repository through a symlink`,
		},
		"symlinked generator file": {
			files: map[string]string{k: "resources: [../../base]\nsecretGenerator:\n- name: s\n  files: [password=pw.txt]\n", "overlays/prod/pw.txt": "symlink:" + filepath.Join(outside, "secret.yaml")},
			want:  k + `: secretGenerator[0].files[0]: "password=pw.txt" leads out of the repository through a symlink`,
		},
		"the repository's .git/config": {
			files: map[string]string{k: "resources: [../../base]\nconfigMapGenerator:\n- name: c\n  files: [../../.git/config]\n", ".git/config": "[http]\n\textraheader = AUTHORIZATION: basic hunter2\n"},
			want:  k + `: configMapGenerator[0].files[0]: "../../.git/config" is inside .git`,
		},
		"the app's own kustomization is a symlink out": {
			files: map[string]string{"overlays/prod/kustomization.yaml": "symlink:" + filepath.Join(outside, "dir", "kustomization.yaml")},
			want:  k + `: cannot be read: it is a symlink that leads out of the repository`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, root, err := renderRepo(t, withFiles(tc.files), "overlays/prod")
			if err == nil {
				t.Fatal("rendered; want the escape refused")
			}
			var me ManifestErrors
			if !errors.As(err, &me) {
				t.Errorf("error is %T, want ManifestErrors", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
			for _, leak := range []string{root, "hunter2"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error mentions %q:\n%v", leak, err)
				}
			}
		})
	}
}

// TestRenderInsideRepository checks the references that stay inside the
// repository, through ".." and symlinks, are built.
func TestRenderInsideRepository(t *testing.T) {
	tests := map[string]map[string]string{
		"../../base": {"overlays/prod/kustomization.yaml": "resources: [../../base]\n"},
		"symlink to a base inside the repository": {
			"overlays/prod/kustomization.yaml": "resources: [shared]\n",
			"overlays/prod/shared":             "symlink:../../base",
		},
		"generator file from ../../config": {
			"overlays/prod/kustomization.yaml": "resources: [../../base]\nconfigMapGenerator:\n- name: extra\n  files: [app.ini=../../config/app.ini]\n",
			"config/app.ini":                   "[server]\n",
		},
	}
	for name, files := range tests {
		t.Run(name, func(t *testing.T) {
			ms, _, err := renderRepo(t, withFiles(files), "overlays/prod")
			if err != nil {
				t.Fatal(err)
			}
			if fieldOf(ms, "ConfigMap", "cm", "data", "a") != "b" {
				t.Errorf("base ConfigMap cm missing from %v", summary(ms))
			}
		})
	}
}

// TestRepoFSRefusesWithoutChecks builds escapes directly, without
// checkKustomizations: the file system alone keeps the build inside the
// repository and writes nothing.
func TestRepoFSRefusesWithoutChecks(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\nstringData: {password: hunter2}\n"})
	tests := map[string]map[string]string{
		"dotdot":      {"app/kustomization.yaml": "resources: [../../secret.yaml]\n"},
		"symlink":     {"app/kustomization.yaml": "resources: [leak.yaml]\n", "app/leak.yaml": "symlink:" + filepath.Join(outside, "secret.yaml")},
		".git/config": {"app/kustomization.yaml": "configMapGenerator:\n- name: c\n  files: [../.git/config]\n", ".git/config": "[http]\n\textraheader = AUTHORIZATION: basic hunter2\n"},
		"generator symlink": {
			"app/kustomization.yaml": "secretGenerator:\n- name: s\n  files: [leak.yaml]\n", "app/leak.yaml": "symlink:" + filepath.Join(outside, "secret.yaml"),
		},
	}
	for name, files := range tests {
		t.Run(name, func(t *testing.T) {
			root := writeTree(t, files)
			ms, err := buildUnchecked(t, root, "app")
			if err == nil {
				t.Fatalf("built %v; want the read refused", summary(ms))
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), root) {
				t.Errorf("error leaks the file or the host path: %v", err)
			}
		})
	}
	fsys, err := openRepoFS(t.TempDir(), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	for _, err := range []error{fsys.WriteFile(repoRoot+"/x", nil), fsys.MkdirAll(repoRoot + "/d"), fsys.RemoveAll(repoRoot)} {
		if !errors.Is(err, errReadOnly) {
			t.Errorf("write = %v, want errReadOnly", err)
		}
	}
}

// buildUnchecked runs the build of root/app skipping checkKustomizations.
//
// Without the guard kustomize clones a remote base into a directory of
// its own under os.TempDir and leaves it behind when the clone fails;
// TMPDIR points at the test's directory so that nothing is left in /tmp.
func buildUnchecked(t *testing.T, root, app string) ([]Manifest, error) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
	fsys, err := openRepoFS(root, time.Now().Add(KustomizeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	return runBuild(context.Background(), fsys, repoRoot+"/"+app, nil)
}

// recorder is a loopback HTTP server that records every request.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Method+" "+req.URL.String())
		r.mu.Unlock()
		fmt.Fprint(w, configMap)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// remoteCases is a kustomization with a remote reference in each field
// kustomize can fetch from, and the field the refusal must name.
func remoteCases(url string) map[string]struct{ kustomization, field, entry string } {
	host := strings.TrimPrefix(url, "http://")
	return map[string]struct{ kustomization, field, entry string }{
		"resources":               {"resources: [../../base, " + url + "/cm.yaml]\n", "resources[1]", url + "/cm.yaml"},
		"resources git":           {"resources:\n- ../../base\n- git::" + url + "/org/repo//deploy?ref=main\n", "resources[1]", "git::" + url + "/org/repo//deploy?ref=main"},
		"resources scp":           {"resources: [../../base, 'git@" + host + ":org/repo.git']\n", "resources[1]", "git@" + host + ":org/repo.git"},
		"resources github":        {"resources:\n- ../../base\n- github.com/org/repo/deploy?ref=v1\n", "resources[1]", "github.com/org/repo/deploy?ref=v1"},
		"bases":                   {"bases: [../../base, " + url + "/org/repo.git]\n", "bases[1]", url + "/org/repo.git"},
		"components":              {"resources: [../../base]\ncomponents: [" + url + "/c]\n", "components[0]", url + "/c"},
		"crds":                    {"resources: [../../base]\ncrds: [" + url + "/crd.json]\n", "crds[0]", url + "/crd.json"},
		"configurations":          {"resources: [../../base]\nconfigurations: [" + url + "/cfg.yaml]\n", "configurations[0]", url + "/cfg.yaml"},
		"generators":              {"resources: [../../base]\ngenerators: [" + url + "/gen.yaml]\n", "generators[0]", url + "/gen.yaml"},
		"transformers":            {"resources: [../../base]\ntransformers: [" + url + "/t.yaml]\n", "transformers[0]", url + "/t.yaml"},
		"validators":              {"resources: [../../base]\nvalidators: [" + url + "/v.yaml]\n", "validators[0]", url + "/v.yaml"},
		"patches path":            {"resources: [../../base]\npatches:\n- path: " + url + "/p.yaml\n", "patches[0].path", url + "/p.yaml"},
		"patchesStrategicMerge":   {"resources: [../../base]\npatchesStrategicMerge: [" + url + "/p.yaml]\n", "patchesStrategicMerge[0]", url + "/p.yaml"},
		"patchesJson6902 path":    {"resources: [../../base]\npatchesJson6902:\n- target: {kind: ConfigMap, name: cm, version: v1}\n  path: " + url + "/p.json\n", "patchesJson6902[0].path", url + "/p.json"},
		"replacements path":       {"resources: [../../base]\nreplacements:\n- path: " + url + "/r.yaml\n", "replacements[0].path", url + "/r.yaml"},
		"openapi path":            {"resources: [../../base]\nopenapi:\n  path: " + url + "/schema.json\n", "openapi.path", url + "/schema.json"},
		"configMapGenerator file": {"resources: [../../base]\nconfigMapGenerator:\n- name: c\n  files: [a.txt, " + url + "/x]\n", "configMapGenerator[0].files[1]", url + "/x"},
		"configMapGenerator key=": {"resources: [../../base]\nconfigMapGenerator:\n- name: c\n  files: [k=" + url + "/x]\n", "configMapGenerator[0].files[0]", "k=" + url + "/x"},
		"configMapGenerator envs": {"resources: [../../base]\nconfigMapGenerator:\n- name: c\n  envs: [" + url + "/e.env]\n", "configMapGenerator[0].envs[0]", url + "/e.env"},
		"configMapGenerator env":  {"resources: [../../base]\nconfigMapGenerator:\n- name: c\n  env: " + url + "/e.env\n", "configMapGenerator[0].env", url + "/e.env"},
		"secretGenerator files":   {"resources: [../../base]\nsecretGenerator:\n- name: s\n  files: [" + url + "/s]\n", "secretGenerator[0].files[0]", url + "/s"},
		"secretGenerator envs":    {"resources: [../../base]\nsecretGenerator:\n- name: s\n  envs: [" + url + "/s.env]\n", "secretGenerator[0].envs[0]", url + "/s.env"},
		"secretGenerator env":     {"resources: [../../base]\nsecretGenerator:\n- name: s\n  env: " + url + "/s.env\n", "secretGenerator[0].env", url + "/s.env"},
		"in the base":             {"resources: [../../base]\n", "", ""}, // the base gets the remote reference, below
	}
}

// TestRenderRefusesRemoteReferences checks that no render of a
// kustomization with a remote reference, in any field kustomize fetches
// from, sends a request, and that each refusal names file and field.
func TestRenderRefusesRemoteReferences(t *testing.T) {
	srv := newRecorder(t)
	const k = "overlays/prod/kustomization.yaml"
	for name, tc := range remoteCases(srv.URL) {
		t.Run(name, func(t *testing.T) {
			files := withFiles(map[string]string{k: tc.kustomization, "overlays/prod/a.txt": "a"})
			want := k + ": " + tc.field + ": " + fmt.Sprintf("%q", tc.entry) + " is a remote reference"
			if name == "in the base" {
				files["base/kustomization.yaml"] = "resources: [cm.yaml]\nconfigMapGenerator:\n- name: c\n  files: [" + srv.URL + "/x]\n"
				want = `base/kustomization.yaml: configMapGenerator[0].files[0]: "` + srv.URL + `/x" is a remote reference`
			}
			_, _, err := renderRepo(t, files, "overlays/prod")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, want)
			}
		})
	}
	if got := srv.requests(); len(got) > 0 {
		t.Errorf("the loopback server received %d request(s): %v", len(got), got)
	}
}

// forbidNetwork installs egress.Forbid (main's network block) for one
// test and undoes it.
func forbidNetwork(t *testing.T) {
	t.Setenv("GIT_ALLOW_PROTOCOL", "restored-by-t.Setenv")
	restore, err := egress.Forbid()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore)
}

// TestForbidDefaultNetwork is the defence in depth: remote references
// that reach kustomize (the checks skipped, as for a field kustomize adds
// later) send nothing, over HTTP or through an exec'd git. Without the
// guard the same build does reach the server, so the test can fail.
func TestForbidDefaultNetwork(t *testing.T) {
	srv := newRecorder(t)
	const gen = "app/kustomization.yaml"
	t.Run("control: without the guard kustomize fetches", func(t *testing.T) {
		root := writeTree(t, map[string]string{gen: "configMapGenerator:\n- name: c\n  files: [" + srv.URL + "/x]\n"})
		if _, err := buildUnchecked(t, root, "app"); err != nil {
			t.Fatal(err)
		}
		if len(srv.requests()) == 0 {
			t.Fatal("kustomize sent nothing even without the guard; this test proves nothing")
		}
		root = writeTree(t, map[string]string{gen: "resources:\n- git::" + srv.URL + "/org/repo//deploy?ref=main\n"})
		if _, err := buildUnchecked(t, root, "app"); err == nil {
			t.Fatal("built a remote base from a server that is not Git")
		}
		if got := fmt.Sprint(srv.requests()); !strings.Contains(got, "/org/repo/info/refs") {
			t.Fatalf("git sent nothing even without the guard (%s); this test proves nothing", got)
		}
	})
	before := len(srv.requests())
	forbidNetwork(t)
	for name, tc := range remoteCases(srv.URL) {
		if tc.field == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			root := writeTree(t, withFiles(map[string]string{"app/kustomization.yaml": strings.ReplaceAll(tc.kustomization, "../../base", "../base"), "app/a.txt": "a"}))
			ms, err := buildUnchecked(t, root, "app")
			t.Logf("error: %v", err)
			if err == nil && strings.Contains(fmt.Sprint(summary(ms)), "remote") {
				t.Errorf("built %v from a remote reference", summary(ms))
			}
		})
	}
	if got := srv.requests()[before:]; len(got) > 0 {
		t.Errorf("with the guard the loopback server received %d request(s): %v", len(got), got)
	}
	if _, err := http.Get(srv.URL + "/x"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("http.Get error = %v, want a refusal", err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://user:pw@127.0.0.1:1/x?token=s3cret", nil)
	if _, err := http.DefaultTransport.RoundTrip(req); err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "pw@") {
		t.Errorf("RoundTrip error = %v, want a refusal without credentials or query", err)
	}
}

// TestKustomizePanicIsTheAppsError checks a panic inside the build is
// recovered into a ManifestErrors naming the kustomization, and the next
// build runs.
func TestKustomizePanicIsTheAppsError(t *testing.T) {
	tests := map[string]struct {
		panicWith any
		want      string
	}{
		"runtime error": {panicWith: nil, want: "kustomize panicked (runtime error: invalid memory address or nil pointer dereference)"},
		"other value":   {panicWith: "password=hunter2", want: "kustomize panicked (its value is not shown"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			setRunKrusty(t, func(filesys.FileSystem, string) (resmap.ResMap, error) {
				if tc.panicWith == nil {
					var m resmap.ResMap
					return m.DeepCopy(), nil // nil interface: a runtime error
				}
				panic(tc.panicWith)
			})
			_, _, err := renderRepo(t, withFiles(map[string]string{"overlays/prod/kustomization.yaml": "resources: [../../base]\n"}), "overlays/prod")
			var me ManifestErrors
			if !errors.As(err, &me) || me[0].File != "overlays/prod/kustomization.yaml" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want ManifestErrors for overlays/prod/kustomization.yaml containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows the panic value: %v", err)
			}
		})
	}
	if _, _, err := renderRepo(t, withFiles(map[string]string{"overlays/prod/kustomization.yaml": "resources: [../../base]\n"}), "overlays/prod"); err != nil {
		t.Errorf("build after the panics: %v", err)
	}
}

func setRunKrusty(t *testing.T, fn func(filesys.FileSystem, string) (resmap.ResMap, error)) {
	prev := runKrusty
	runKrusty = fn
	t.Cleanup(func() { runKrusty = prev })
}

// TestKustomizeTimeLimit checks a build that does not end is abandoned at
// its deadline with the kustomization named, and that the file system
// refuses it from then on so it frees the slot.
func TestKustomizeTimeLimit(t *testing.T) {
	release := make(chan struct{})
	readAfter := make(chan error, 1)
	setRunKrusty(t, func(fsys filesys.FileSystem, dir string) (resmap.ResMap, error) {
		<-release
		_, err := fsys.ReadFile(dir + "/kustomization.yaml")
		readAfter <- err
		return nil, err
	})
	root := writeTree(t, withFiles(map[string]string{"app/kustomization.yaml": "resources: [../base]\n"}))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Render(ctx, Tree{Root: root, Dir: filepath.Join(root, "app")})
	if err == nil || !strings.Contains(err.Error(), "app/kustomization.yaml: kustomize build: ") {
		t.Fatalf("error = %v, want the build given up with app/kustomization.yaml named", err)
	}
	close(release)
	if err := <-readAfter; !errors.Is(err, errBuildTimeout) {
		t.Errorf("read after the deadline = %v, want errBuildTimeout", err)
	}
	select {
	case kustomizeSlot <- struct{}{}:
		<-kustomizeSlot
	case <-time.After(10 * time.Second):
		t.Fatal("the abandoned build still holds the kustomize slot")
	}
}

// setLimits shortens the build time limit and the stuck grace for a test.
func setLimits(t *testing.T, timeout, grace time.Duration) {
	prevT, prevG := buildTimeout, stuckGrace
	buildTimeout, stuckGrace = timeout, grace
	t.Cleanup(func() { buildTimeout, stuckGrace = prevT, prevG })
}

// TestKustomizeQueueWaitIsFree checks that waiting behind other apps'
// builds does not count against a build's time limit: four builds of
// 150 ms each, queued at once under a 300 ms limit, all succeed.
func TestKustomizeQueueWaitIsFree(t *testing.T) {
	setLimits(t, 300*time.Millisecond, time.Minute)
	real := runKrusty
	setRunKrusty(t, func(fsys filesys.FileSystem, dir string) (resmap.ResMap, error) {
		time.Sleep(150 * time.Millisecond) // a slow build, within its limit
		return real(fsys, dir)
	})
	root := writeTree(t, withFiles(map[string]string{"app/kustomization.yaml": "resources: [../base]\n"}))
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Render(context.Background(), Tree{Root: root, Dir: filepath.Join(root, "app")})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("build %d: %v", i, err)
		}
	}
}

// TestKustomizeStuckBuild checks that builds waiting behind one that never
// ends give up once it is stuckGrace past its deadline, naming the
// problem, instead of waiting for ever.
func TestKustomizeStuckBuild(t *testing.T) {
	setLimits(t, 100*time.Millisecond, 100*time.Millisecond)
	release := make(chan struct{})
	ended := make(chan struct{})
	setRunKrusty(t, func(fsys filesys.FileSystem, dir string) (resmap.ResMap, error) {
		defer close(ended)
		<-release // stuck in CPU work: never reads a file
		return nil, errors.New("released")
	})
	root := writeTree(t, withFiles(map[string]string{"app/kustomization.yaml": "resources: [../base]\n"}))
	render := func() error {
		_, err := Render(context.Background(), Tree{Root: root, Dir: filepath.Join(root, "app")})
		return err
	}
	if err := render(); err == nil || !strings.Contains(err.Error(), "did not finish in time") {
		t.Fatalf("stuck build: error = %v, want the time limit", err)
	}
	start := time.Now()
	err := render()
	if err == nil || !errors.Is(err, errSlotStuck) || !strings.Contains(err.Error(), "app/kustomization.yaml: kustomize build: another app's kustomize build ran past its time limit") {
		t.Errorf("build behind the stuck one: error = %v, want errSlotStuck naming app/kustomization.yaml", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("gave up after %s", waited)
	}
	close(release)
	<-ended
}
