// Package decrypt holds what syncd knows of SOPS-encrypted files without
// the SOPS library: an app's keys (apps[].decryption in syncd.yaml: age
// identities and OpenPGP private keys read from a keys file on syncd's
// side, never from the repository), which files SOPS encrypted
// (FormatOf, IsEncrypted), and the data keys those keys unwrap
// (AgeDataKey, PGPDataKey).
//
// Reading a file itself (Keys.Decrypt) is package sopsfile, registered
// when a binary imports it. Only the binaries that render import it:
// syncd-render, the render child syncd runs each render in, and test
// binaries that render in process. syncd itself parses keys (to refuse a
// bad keys file before a render) but never decrypts, so it does not link
// the SOPS library, whose root package links gRPC, xDS and the AWS, Azure
// and Google Cloud KMS clients: about 29 MB of binary and 20 MiB of
// resident memory at start (docs/performance.md).
package decrypt
