// Command syncd-render is the binary syncd runs each render in (package
// renderproc): one request on stdin, its answer on file descriptor 3,
// then it exits. It ships beside syncd and is not run by hand.
//
// It is a binary of its own so that syncd, which stays resident, does not
// link the SOPS library (package sopsfile, imported here) and its key
// services.
package main

import (
	"fmt"
	"os"

	_ "syncd.dev/syncd/internal/decrypt/sopsfile" // renders read SOPS files
	"syncd.dev/syncd/internal/renderproc"
)

func main() {
	renderproc.Main()
	fmt.Fprintf(os.Stderr, "%s renders for syncd, which starts it; it is not run by hand: run syncd\n", renderproc.RenderBinary)
	os.Exit(2)
}
