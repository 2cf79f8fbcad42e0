package config

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// app is the start of one app of source "repo" under header; its first
// field is on line 10, so a field added after it is on line 12.
const app = header + "apps:\n  - name: web\n    source: repo\n"

func TestSubstitutionAccepts(t *testing.T) {
	yaml := app + `    substitute:
      CLUSTER: prod
      _replicas2: "3"
    substituteFrom:
      - file: vars/cluster.yaml
      - file: /etc/syncd/secret-vars.yaml
        sensitive: true
        optional: true
      - kind: ConfigMap
        name: cluster-vars
      - kind: Secret
        name: cluster-secrets
        optional: true
    substituteStrict: false
`
	c, err := Parse([]byte(yaml), "syncd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a := c.Apps[0]
	if diff := cmp.Diff(map[string]SubstituteValue{"CLUSTER": "prod", "_replicas2": "3"}, a.Substitute); diff != "" {
		t.Errorf("substitute (-want +got):\n%s", diff)
	}
	if !a.Substitutes() || a.StrictSubstitution() {
		t.Errorf("Substitutes() = %v, StrictSubstitution() = %v; want true, false", a.Substitutes(), a.StrictSubstitution())
	}
	c.resolveFiles("/cfg")
	want := []SubstituteSource{
		{File: filepath.Join("/cfg", "vars/cluster.yaml")},
		{File: "/etc/syncd/secret-vars.yaml", Sensitive: true, Optional: true},
		{Kind: SubstituteConfigMap, Name: "cluster-vars"},
		{Kind: SubstituteSecret, Name: "cluster-secrets", Optional: true},
	}
	if diff := cmp.Diff(want, c.Apps[0].SubstituteFrom); diff != "" {
		t.Errorf("substituteFrom after resolving files (-want +got):\n%s", diff)
	}
}

func TestSubstitutionDefaults(t *testing.T) {
	c, err := Parse([]byte(app+"    substitute: {A: a}\n"), "syncd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Apps[0].StrictSubstitution() {
		t.Error("StrictSubstitution() = false without substituteStrict, want true (strict by default)")
	}
	if (App{}).Substitutes() {
		t.Error("an app without substitute or substituteFrom Substitutes()")
	}
}

func TestSubstitutionRejects(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want []wantErr
	}{
		"variable name with a dash": {
			yaml: app + "    substitute:\n      cluster-name: prod\n",
			want: []wantErr{{13, "apps[0].substitute.cluster-name", `"cluster-name" is not a variable name`}},
		},
		"variable name starting with a digit": {
			yaml: app + "    substitute:\n      1X: prod\n",
			want: []wantErr{{13, "apps[0].substitute.1X", "not a variable name"}},
		},
		"a number as a value": {
			yaml: app + "    substitute:\n      REPLICAS: 3\n",
			want: []wantErr{{13, "apps[0].substitute.REPLICAS", `put it in quotes: "3"`}},
		},
		"substitute is a list": {
			yaml: app + "    substitute: [A]\n",
			want: []wantErr{{12, "apps[0].substitute", "expected a mapping of names to values, got a list"}},
		},
		"file and kind": {
			yaml: app + "    substituteFrom:\n      - {file: v.yaml, kind: ConfigMap, name: v}\n",
			want: []wantErr{{13, "apps[0].substituteFrom[0]", "file and kind/name are both set"}},
		},
		"empty entry": {
			yaml: app + "    substituteFrom:\n      - optional: true\n",
			want: []wantErr{{13, "apps[0].substituteFrom[0]", "set file"}},
		},
		"unknown kind": {
			yaml: app + "    substituteFrom:\n      - {kind: Deployment, name: v}\n",
			want: []wantErr{{13, "apps[0].substituteFrom[0].kind", `"Deployment" is not a kind variables come from`}},
		},
		"kind without name": {
			yaml: app + "    substituteFrom:\n      - kind: Secret\n",
			want: []wantErr{{13, "apps[0].substituteFrom[0].name", "name is required"}},
		},
		"name without kind": {
			yaml: app + "    substituteFrom:\n      - name: vars\n",
			want: []wantErr{{13, "apps[0].substituteFrom[0].kind", "kind is required with name"}},
		},
		"bad object name": {
			yaml: app + "    substituteFrom:\n      - {kind: ConfigMap, name: Vars_1}\n",
			want: []wantErr{{13, "apps[0].substituteFrom[0].name", `"Vars_1" is not a valid object name`}},
		},
		"strict without variables": {
			yaml: app + "    substituteStrict: true\n",
			want: []wantErr{{12, "apps[0].substituteStrict", "no effect without substitute or substituteFrom"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "syncd.yaml")
			checkErrors(t, "syncd.yaml", problems(t, err), tc.want)
		})
	}
}
