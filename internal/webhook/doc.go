// Package webhook receives Git push events from GitHub, GitLab and Gitea,
// verifies each provider's signature or token, and asks for an immediate
// poll of every source whose repository the push names.
//
// It guarantees that a request without a valid signature (or token) is
// refused with 401 before its body is interpreted. It does not apply
// anything itself and does not trust the pushed SHA: it only triggers a
// poll, which resolves the ref from Git as usual.
package webhook
