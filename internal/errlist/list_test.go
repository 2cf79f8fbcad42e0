package errlist

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type problem struct {
	msg   string
	cause error
}

func (p *problem) Error() string { return p.msg }
func (p *problem) Unwrap() error { return p.cause }

func TestList(t *testing.T) {
	tests := map[string]struct {
		list    List[*problem]
		want    string
		isNotEx bool
	}{
		"none": {list: nil, want: ""},
		"one":  {list: List[*problem]{{msg: "a.yaml: bad"}}, want: "a.yaml: bad"},
		"two, one with a cause": {
			list:    List[*problem]{{msg: "a.yaml: bad"}, {msg: "b.yaml: missing", cause: fs.ErrNotExist}},
			want:    "a.yaml: bad\nb.yaml: missing",
			isNotEx: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var err error = tc.list
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tc.isNotEx {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tc.isNotEx)
			}
			var p *problem
			if got, want := errors.As(err, &p), len(tc.list) > 0; got != want {
				t.Fatalf("errors.As(err, *problem) = %v, want %v", got, want)
			}
			if p != nil && p != tc.list[0] {
				t.Errorf("errors.As found %q, want the first problem %q", p.msg, tc.list[0].msg)
			}
		})
	}
}
