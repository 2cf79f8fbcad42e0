package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// StopEtcd stops etcd while kube-apiserver keeps running, to test how
// clients ride out a storage outage: the API server answers, but reads
// and writes that reach storage fail or hang until etcd is back. The
// data directory is kept.
func (e *Env) StopEtcd() error { return e.stopProc("etcd") }

// StartEtcd starts etcd again after StopEtcd, on the same client URL (the
// one kube-apiserver's --etcd-servers names) and data directory, and waits
// until etcd is healthy and the API server is ready again.
func (e *Env) StartEtcd(ctx context.Context) error {
	if !e.exited("etcd") {
		return errors.New("testenv: StartEtcd: etcd is running; call StopEtcd first")
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	// A new peer port is fine for a cluster of one (runEtcd).
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if err := e.runEtcd(ctx, peer); err != nil {
		return err
	}
	return e.waitAPIServerReady(ctx)
}

// waitAPIServerReady waits until kube-apiserver's /readyz answers 200
// (its etcd check included).
func (e *Env) waitAPIServerReady(ctx context.Context) error {
	cfg := e.restConfig()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	hdr := http.Header{"Authorization": {"Bearer " + e.adminTok}}
	return waitHTTP(ctx, client, cfg.Host+"/readyz", hdr, 90*time.Second, e.logTail("kube-apiserver"))
}

// APIServerStorageDown reports whether kube-apiserver is up and says its
// storage is unreachable (its /readyz etcd check fails), so a test can
// wait until the API server has noticed an etcd outage.
func (e *Env) APIServerStorageDown(ctx context.Context) (bool, error) {
	cfg := e.restConfig()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/readyz/etcd", nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+e.adminTok)
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return resp.StatusCode != http.StatusOK, nil
}
