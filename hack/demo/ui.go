package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
)

// ownershipUI starts `syncd ui` on the demo's cluster, checks that the
// Deployment's ownership map names both of the app's managers and the
// other team's, and prints its address. On a terminal it waits for Enter
// so that the map can be opened in a browser before everything stops;
// otherwise (CI, a pipe) it goes on.
func (d *demo) ownershipUI(ctx context.Context) error {
	d.step("The ownership map: syncd ui, a local web UI of every field's manager(s)")
	args := []string{"ui", "--address", "127.0.0.1:0", "--config", d.cfg, "--cache-dir", filepath.Join(d.dir, "cache-cli"), "--kubeconfig", d.env.Kubeconfig}
	say("$ syncd %s", strings.Join(args[:5], " "))
	base, stop, err := d.startUI(ctx, args)
	if err != nil {
		return err
	}
	d.onStop(stop)
	q := url.Values{"app": {app}, "group": {"apps"}, "version": {"v1"}, "kind": {"Deployment"}, "namespace": {ns}, "name": {"web"}}
	page := base + "/object?" + q.Encode()
	body, err := httpText(ctx, page)
	if err != nil {
		return err
	}
	for _, m := range []string{"syncd-web", "syncd-web-release", "nginx:1.29"} {
		if err := expect(strings.Contains(body, m), "the Deployment's ownership map to show %s", m); err != nil {
			return err
		}
	}
	ok("the Deployment's map shows syncd-web's fields and syncd-web-release's image, one colour each")
	fmt.Printf("\n    \033[1mThe ownership map is at %s/\033[0m\n    the Deployment: %s\n", base, page)
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		say("(not a terminal: the demo goes on and stops it; run syncd ui against your own cluster to keep one)")
		return nil
	}
	fmt.Print("    Open it in a browser; press Enter to stop the demo and the UI. ")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return nil
}

// startUI runs syncd with args, reads the address it prints, and returns
// it with a function that stops the process.
func (d *demo) startUI(ctx context.Context, args []string) (string, func() error, error) {
	cmd := exec.Command(d.bin, args...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE=syncd-system")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start syncd ui: %w", err)
	}
	stop := func() error {
		fmt.Println("    stopping syncd ui")
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		return nil
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, rest, found := strings.Cut(sc.Text(), "serving "); found {
				addr <- strings.TrimSuffix(strings.Fields(rest)[0], "/")
			}
		}
	}()
	select {
	case a := <-addr:
		return a, stop, nil
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	_ = stop()
	return "", nil, fmt.Errorf("syncd ui printed no address within 30s:\n%s", stderr.String())
}

// httpText fetches a page and fails unless it is 200.
func httpText(ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d\n%s", u, resp.StatusCode, body)
	}
	return string(body), nil
}
