// Package sopsfile turns SOPS-encrypted files into their plaintext, in
// memory, with the keys of one app (decrypt.Keys). Importing it registers
// Decrypt as what decrypt.Keys.Decrypt calls (decrypt.Register).
//
// It reads what `sops --encrypt` writes (the SOPS v3 format): YAML (one
// or more documents), JSON and dotenv files, values encrypted with
// AES256-GCM under a data key that age or OpenPGP recipients hold, in one
// key group or several (Shamir's secret sharing). The data key is
// recovered with the app's keys alone; no key service, cloud KMS, gpg
// binary, age plugin or environment variable is consulted. The file's MAC
// is checked, so a value changed or added after encryption is refused.
//
// Decrypt also returns every value it decrypted, so the planner can find
// where they landed in the rendered objects and hide them (internal/redact
// decides how). Errors name the problem and never quote a value.
//
// Not guaranteed: only decryption is supported (this package never
// encrypts); age keys must be native X25519 identities (AGE-SECRET-KEY-1…)
// — SSH keys and plugin identities are refused; OpenPGP keys must not be
// protected by a passphrase; files in SOPS's INI and binary formats are
// not recognised.
//
// Importing the SOPS library runs its audit package's init, which reads
// /etc/sops/audit.yaml when it exists (and connects to the PostgreSQL
// databases it lists): syncd's image has no such file, and a host that
// runs syncd should not have one.
package sopsfile
