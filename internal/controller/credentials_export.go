package controller

import (
	"context"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// WriteCredentials writes the keys of the Secrets a GitSource names to
// files below dir, as the controller does before each reconcile, and
// returns their paths for Translate. It is for one-shot users outside
// the controller (syncd plan --app): the caller owns dir and removes it.
// A Secret or key the GitSource needs and lacks is a MissingSecretError;
// values are never returned or put in an error.
func WriteCredentials(ctx context.Context, secrets SecretReader, dir string, src *v1alpha1.GitSource) (Credentials, error) {
	return credentialWriter{secrets: secrets, dir: dir}.write(ctx, Source{Git: src})
}
