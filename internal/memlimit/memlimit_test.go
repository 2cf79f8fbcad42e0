package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const mib = 1 << 20

// cgroupFile is a Provider reading a fake cgroup file tree: the memory
// limit file at path, in cgroup v2's form (memory.max: bytes, or "max")
// or v1's (memory.limit_in_bytes: bytes, a page-rounded maximum when
// unlimited), as the kernel writes them.
func cgroupFile(path string) Provider {
	return func() (uint64, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, ErrNoLimit
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, err
		}
		if v >= math.MaxInt64&^4095 {
			return 0, ErrNoLimit
		}
		return v, nil
	}
}

func TestSet(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v2Limited := cgroupFile(write("v2/limited/memory.max", "268435456\n"))
	v2Large := cgroupFile(write("v2/large/memory.max", "1073741824\n"))
	v2Tiny := cgroupFile(write("v2/tiny/memory.max", "134217728\n"))
	v2Unlimited := cgroupFile(write("v2/unlimited/memory.max", "max\n"))
	v1Limited := cgroupFile(write("v1/limited/memory/memory.limit_in_bytes", "536870912\n"))
	v1Unlimited := cgroupFile(write("v1/unlimited/memory/memory.limit_in_bytes", "9223372036854771712\n"))
	missing := cgroupFile(filepath.Join(dir, "none/memory.max"))

	const before = int64(math.MaxInt64)
	tests := map[string]struct {
		opts    Options
		env     string
		want    Result
		wantSet int64 // the limit set; 0: none set
		wantErr string
	}{
		"cgroup v2 limit of 1 GiB: 90 %": {
			opts:    Options{Provider: v2Large},
			want:    Result{Source: SourceCgroup, Limit: 966367641, Container: 1024 * mib},
			wantSet: 966367641,
		},
		"cgroup v2 limit of 256 MiB: the reserve for the binary's pages left out, not 10 %": {
			opts:    Options{Provider: v2Limited},
			want:    Result{Source: SourceCgroup, Limit: 176 * mib, Container: 256 * mib},
			wantSet: 176 * mib,
		},
		"cgroup v1 limit of 512 MiB: the reserve left out": {
			opts:    Options{Provider: v1Limited},
			want:    Result{Source: SourceCgroup, Limit: 432 * mib, Container: 512 * mib},
			wantSet: 432 * mib,
		},
		"cgroup limit of 128 MiB: not below half of it": {
			opts:    Options{Provider: v2Tiny},
			want:    Result{Source: SourceCgroup, Limit: 64 * mib, Container: 128 * mib},
			wantSet: 64 * mib,
		},
		"no reserve: 90 %": {
			opts:    Options{Provider: v2Limited, Reserve: -1},
			want:    Result{Source: SourceCgroup, Limit: 241591910, Container: 256 * mib},
			wantSet: 241591910,
		},
		"another ratio": {
			opts:    Options{Provider: v2Limited, Ratio: 0.5},
			want:    Result{Source: SourceCgroup, Limit: 128 * mib, Container: 256 * mib},
			wantSet: 128 * mib,
		},
		"cgroup v2 without a limit: none set": {
			opts: Options{Provider: v2Unlimited},
			want: Result{Source: SourceNone, Limit: before},
		},
		"cgroup v1 without a limit: none set": {
			opts: Options{Provider: v1Unlimited},
			want: Result{Source: SourceNone, Limit: before},
		},
		"GOMEMLIMIT set: left as it is, the cgroup not read": {
			opts: Options{Provider: missing},
			env:  "300MiB",
			want: Result{Source: SourceEnv, Limit: before},
		},
		"cgroup unreadable: none set, an error saying what to do": {
			opts:    Options{Provider: missing},
			want:    Result{Source: SourceNone, Limit: before},
			wantErr: "set GOMEMLIMIT to about 90% of the container's memory limit instead",
		},
		"bad ratio": {
			opts:    Options{Provider: v2Limited, Ratio: 1.5},
			want:    Result{Source: SourceNone, Limit: before},
			wantErr: "ratio 1.5: must be above 0 and at most 1",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var set int64
			tc.opts.Getenv = func(k string) string {
				if k == EnvVar {
					return tc.env
				}
				return ""
			}
			tc.opts.SetLimit = func(l int64) int64 {
				if l >= 0 {
					set = l
				}
				return before
			}
			got, err := Set(tc.opts)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Set: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Set: error %v, want one containing %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Set result (-want +got):\n%s", diff)
			}
			if set != tc.wantSet {
				t.Errorf("limit set: %d, want %d", set, tc.wantSet)
			}
		})
	}
}
