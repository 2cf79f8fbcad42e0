package ownership

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Fingerprint returns a digest of manager m's managedFields entries in
// mfs (every operation and subresource, in order): the manager, the
// operation, the subresource, the API version, the time and the fields,
// the fields in structured-merge-diff's canonical encoding, so the digest
// does not depend on how a client re-encoded the raw fieldsV1 (a watch
// cache keeps the server's bytes, an unstructured object re-marshals
// them). A manager with no entry has the digest of nothing, never "".
//
// Two fingerprints of the same manager are equal exactly when nobody
// changed what the manager owns, its API version or when it last
// changed it: another writer that takes a field (an Update that changes
// it, a forced Apply) changes the entry, while writes by others that
// leave the manager's fields alone (a controller writing status or its
// own annotations, another manager applying the same values) do not.
// An entry whose fields do not decode is digested as its raw bytes.
func Fingerprint(mfs []metav1.ManagedFieldsEntry, m string) string {
	return digest(mfs, m, canonicalFields, entryTime)
}

// HasFingerprint reports whether manager m's entries in mfs have the
// fingerprint want (Fingerprint(mfs, m) == want), decoding no fields when
// it can: the API server writes fieldsV1 in structured-merge-diff's
// canonical encoding, so for metadata decoded from its answers (a LIST, a
// GET, a watch event) the digest of the raw bytes is the fingerprint. Only
// when that digest differs (the fields changed, or a client re-encoded
// them, as an unstructured object does) are the fields decoded and
// digested canonically. A raw digest equal to want means the bytes
// digested are the canonical ones want was made of.
func HasFingerprint(mfs []metav1.ManagedFieldsEntry, m, want string) bool {
	return digest(mfs, m, rawFields, entryTime) == want || Fingerprint(mfs, m) == want
}

// Holding returns a digest of what manager m holds in mfs: its entries'
// operation, subresource, API version and fields (canonical, as
// Fingerprint), but not when it last wrote them. It is the record of a
// manager syncd yielded fields to: the digest stays the same while that
// manager keeps writing the fields it holds (an operator changing a value
// it owns), and changes when it lets a field go or another writer takes
// one from it, which is when syncd should apply its own value again. A
// manager with no entry has the digest of nothing, never "".
func Holding(mfs []metav1.ManagedFieldsEntry, m string) string {
	return digest(mfs, m, canonicalFields, anyTime)
}

// HasHolding reports whether Holding(mfs, m) == want, decoding no fields
// when the raw bytes give it (as HasFingerprint).
func HasHolding(mfs []metav1.ManagedFieldsEntry, m, want string) bool {
	return digest(mfs, m, rawFields, anyTime) == want || Holding(mfs, m) == want
}

// digest is Fingerprint with each entry's fields as fields returns them
// and its time as stamp does.
func digest(mfs []metav1.ManagedFieldsEntry, m string, fields func(metav1.ManagedFieldsEntry) []byte, stamp func(metav1.ManagedFieldsEntry) string) string {
	h := sha256.New()
	for _, e := range mfs {
		if e.Manager != m {
			continue
		}
		h.Write([]byte(e.Manager + "\x00" + string(e.Operation) + "\x00" + e.Subresource + "\x00" + e.APIVersion + "\x00" + stamp(e) + "\x00"))
		h.Write(fields(e))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// rawFields is an entry's fieldsV1 as it was read.
func rawFields(e metav1.ManagedFieldsEntry) []byte {
	if e.FieldsV1 == nil {
		return nil
	}
	return e.FieldsV1.Raw
}

// entryTime is an entry's time in UTC at the API server's precision.
func entryTime(e metav1.ManagedFieldsEntry) string {
	if e.Time == nil {
		return ""
	}
	return e.Time.UTC().Format(time.RFC3339)
}

// anyTime stands for an entry's time in a digest that does not depend on
// it (Holding).
func anyTime(metav1.ManagedFieldsEntry) string { return "" }

// canonicalFields is an entry's fieldsV1 as structured-merge-diff
// encodes it, or the raw bytes when they do not decode.
func canonicalFields(e metav1.ManagedFieldsEntry) []byte {
	if e.FieldsV1 == nil {
		return nil
	}
	set := &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
		return e.FieldsV1.Raw
	}
	out, err := set.ToJSON()
	if err != nil {
		return e.FieldsV1.Raw
	}
	return out
}
