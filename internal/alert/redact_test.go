package alert

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/redact"
)

func fp(parts ...any) fieldpath.Path { return fieldpath.MakePathOrDie(parts...) }

func TestRedact(t *testing.T) {
	secret := ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "web", Name: "db"}
	cm := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "web", Name: "settings"}
	tests := map[string]struct {
		in, want Event
	}{
		"secret data and stringData values are redacted, metadata is not": {
			in: Event{Object: secret, Summary: "password changed from old-pass to new-pass", Fields: []Field{
				{Path: ".data.password", FieldPath: fp("data", "password"), Desired: "new-pass", Live: "old-pass"},
				{Path: ".stringData.token", FieldPath: fp("stringData", "token"), Desired: "tok-123", Live: ""},
				{Path: ".data", FieldPath: fp("data"), Desired: `{"a":"b"}`, Live: `{"a":"c"}`},
				{Path: ".data[tls.crt]", FieldPath: fp("data", "tls.crt"), Desired: "CERT", Live: "CERT2"},
				{Path: ".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration", FieldPath: fp("metadata", "annotations", redact.LastApplied), Desired: "", Live: `{"data":{"password":"old-pass"}}`},
				{Path: ".metadata.labels.team", FieldPath: fp("metadata", "labels", "team"), Desired: "a", Live: "b"},
				{Path: ".type", FieldPath: fp("type"), Desired: "Opaque", Live: "kubernetes.io/tls"},
			}},
			want: Event{Object: secret, Summary: "password changed from <redacted> to <redacted>", Fields: []Field{
				{Path: ".data.password", FieldPath: fp("data", "password"), Desired: redact.Marker, Live: redact.Marker, Sensitive: true},
				{Path: ".stringData.token", FieldPath: fp("stringData", "token"), Desired: redact.Marker, Live: "", Sensitive: true},
				{Path: ".data", FieldPath: fp("data"), Desired: redact.Marker, Live: redact.Marker, Sensitive: true},
				{Path: ".data[tls.crt]", FieldPath: fp("data", "tls.crt"), Desired: redact.Marker, Live: redact.Marker, Sensitive: true},
				{Path: ".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration", FieldPath: fp("metadata", "annotations", redact.LastApplied), Desired: "", Live: redact.Marker, Sensitive: true},
				{Path: ".metadata.labels.team", FieldPath: fp("metadata", "labels", "team"), Desired: "a", Live: "b"},
				{Path: ".type", FieldPath: fp("type"), Desired: "Opaque", Live: "kubernetes.io/tls"},
			}},
		},
		"fields marked sensitive are redacted on any kind": {
			in: Event{Object: cm, Summary: "apiKey is now abcd-efgh", Fields: []Field{
				{Path: ".data.apiKey", Desired: "abcd-efgh", Live: "zzzz-yyyy", Sensitive: true},
				{Path: ".data.colour", Desired: "blue", Live: "red"},
			}},
			want: Event{Object: cm, Summary: "apiKey is now <redacted>", Fields: []Field{
				{Path: ".data.apiKey", Desired: redact.Marker, Live: redact.Marker, Sensitive: true},
				{Path: ".data.colour", Desired: "blue", Live: "red"},
			}},
		},
		"configmap data is not secret": {
			in:   Event{Object: cm, Fields: []Field{{Path: ".data.colour", Desired: "blue", Live: "red"}}},
			want: Event{Object: cm, Fields: []Field{{Path: ".data.colour", Desired: "blue", Live: "red"}}},
		},
		"a secret's field without a structured path is hidden when it has values": {
			in:   Event{Object: secret, Fields: []Field{{Path: ".data.x", Desired: "abcdef"}, {Path: ".data.y", Class: "conflict"}}},
			want: Event{Object: secret, Fields: []Field{{Path: ".data.x", Desired: redact.Marker, Sensitive: true}, {Path: ".data.y", Class: "conflict"}}},
		},
		"error text in the summary is scrubbed": {
			in:   Event{Object: secret, Summary: `Secret "db" is invalid: data[k]: Invalid value: "s3cr3t-value": bad`, Fields: []Field{{Path: ".type"}}},
			want: Event{Object: secret, Summary: `Secret "db" is invalid: data[k]: Invalid value: <redacted>: bad`, Fields: []Field{{Path: ".type"}}},
		},
		"short values are redacted but not scrubbed from the summary": {
			in:   Event{Object: secret, Summary: "a b", Fields: []Field{{Path: ".data.x", FieldPath: fp("data", "x"), Desired: "a", Live: "b"}}},
			want: Event{Object: secret, Summary: "a b", Fields: []Field{{Path: ".data.x", FieldPath: fp("data", "x"), Desired: redact.Marker, Live: redact.Marker, Sensitive: true}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			orig := tc.in.Fields[0]
			got := Redact(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Redact (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(orig, tc.in.Fields[0]); diff != "" {
				t.Errorf("Redact changed the caller's Fields slice (-before +after):\n%s", diff)
			}
		})
	}
}

// TestSecretsNeverSent sends Secret changes through every sink type,
// unredacted by the producer, and checks no payload holds a value.
func TestSecretsNeverSent(t *testing.T) {
	values := []string{"hunter2-desired-password", "old-live-password", "c3VwZXJzZWNyZXQ=", "tok-live-0042", "sk_live_sensitive"}
	events := []Event{
		{
			Type: EventDrift, App: "shop", Revision: "r1", Time: t0,
			Object:  ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "web", Name: "db"},
			Summary: "password set to hunter2-desired-password by hand",
			Fields: []Field{
				{Path: ".data.password", Class: "taken-over", Desired: "hunter2-desired-password", Live: "old-live-password", Culprit: Culprit{Manager: "kubectl-edit"}},
				{Path: ".stringData.token", Class: "value-drift", Desired: "c3VwZXJzZWNyZXQ=", Live: "tok-live-0042"},
			},
		},
		{
			Type: EventConflict, App: "shop", Revision: "r1", Time: t0,
			Object: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "web", Name: "settings"},
			Fields: []Field{{Path: ".data.apiKey", Class: "conflict", Desired: "sk_live_sensitive", Live: "x", Sensitive: true}},
		},
	}
	for _, typ := range []string{string(SinkSlack), string(SinkMSTeams), string(SinkDiscord), string(SinkWebhook)} {
		t.Run(typ, func(t *testing.T) {
			rec := newRecorder(t)
			n := mustNew(t, []Sink{testAlert(t, "s", SinkType(typ), rec.URL)}, testOptions(newFakeClock()))
			for _, ev := range events {
				n.Notify(ev)
				resolved := ev
				resolved.Resolved = true
				n.Notify(resolved)
			}
			closeNotifier(t, n)
			reqs := rec.Requests()
			if len(reqs) != 4 {
				t.Fatalf("got %d requests, want 4", len(reqs))
			}
			for i, r := range reqs {
				for _, v := range values {
					if strings.Contains(string(r.Body), v) {
						t.Errorf("request %d contains secret value %q:\n%s", i, v, r.Body)
					}
				}
				if !strings.Contains(string(r.Body), "redacted") {
					t.Errorf("request %d does not say the value was redacted:\n%s", i, r.Body)
				}
			}
		})
	}
}
