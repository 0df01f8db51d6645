package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/migration-aware/adc/pkg/rollout"
)

// FetchController reads a running controller's memory: the rollout report its HTTP listener
// (--http-addr) serves at rolloutPath (pkg/dashboard's APIPath, passed in: the dashboard
// imports this package). base is the controller's address, e.g. http://localhost:8080 after
// `kubectl -n adc-system port-forward deploy/adc 8080`. Every failure says what to check.
func FetchController(ctx context.Context, client *http.Client, base, rolloutPath string) (*rollout.Report, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--controller %q is not an http(s) URL; give the controller's address, e.g. http://localhost:8080", base)
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	target := u.String() + rolloutPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("asking the controller at %s: %w", base, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the controller at %s did not answer: %w; check --controller (the controller's --http-addr; e.g. kubectl -n adc-system port-forward deploy/adc 8080, then --controller http://localhost:8080)", base, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the controller's answer from %s: %w", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the controller at %s answered %s for %s: is it adc's HTTP listener? %s", base, resp.Status, rolloutPath, strings.TrimSpace(string(body[:min(len(body), 200)])))
	}
	var r rollout.Report
	if err := json.Unmarshal(body, &r); err != nil || r.Source == "" {
		return nil, fmt.Errorf("the answer of %s is not adc's rollout report (%v); check --controller points at adc", target, err)
	}
	return &r, nil
}
