// Package ociregistry runs an in-memory OCI registry on loopback for
// tests (go-containerregistry's pkg/registry behind httptest), counts the
// requests it answers, can require HTTP basic credentials, and pushes
// artifacts built in the test: manifests in the format flux push artifact
// writes, Helm charts as helm push writes them, and raw tar entries for
// refusal tests.
//
// It is for tests only: nothing is persisted, and the basic-auth check is
// a fixed user and password, not a token service.
package ociregistry
