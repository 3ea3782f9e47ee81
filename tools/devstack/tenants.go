package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// token asks the stack's identity provider for a token of a client, as an
// integration does.
func (c Credentials) token(ctx context.Context, id, secret string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "resource": {c.Resource}}
	var out struct {
		AccessToken string `json:"access_token"`
	}
	status, err := c.call(ctx, http.MethodPost, c.AuthURL+"/oidc/token", "", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), &out)
	if err == nil && (status != http.StatusOK || out.AccessToken == "") {
		err = fmt.Errorf("answered %d", status)
	}
	if err != nil {
		return "", fmt.Errorf("token of client %s: %w", id, err)
	}
	return out.AccessToken, nil
}

// ensureOrganization finds or creates, with token, the organization with
// registration number registration in Germany, through the API as an
// integration would: created the first time (201), found by the 409 that
// names the existing one afterwards. It returns its id.
func (c Credentials) ensureOrganization(ctx context.Context, token, name, registration string) (string, error) {
	body, _ := json.Marshal(map[string]string{"name": name, "registration_number": registration, "country": "de", "organization_type": "private"})
	var out struct {
		ID         string `json:"id"`
		ExistingID string `json:"existing_id"`
	}
	// The gateway may not know every service to be up at its first call:
	// a 503 (or a 429) is tried again for a while.
	for {
		status, err := c.call(ctx, http.MethodPost, c.RegistryURL+"/organizations", token, "application/json", bytes.NewReader(body), &out)
		switch {
		case err != nil:
			return "", fmt.Errorf("organization %s: %w", registration, err)
		case status == http.StatusCreated && out.ID != "":
			return out.ID, nil
		case status == http.StatusConflict && out.ExistingID != "":
			return out.ExistingID, nil
		case status != http.StatusServiceUnavailable && status != http.StatusTooManyRequests:
			return "", fmt.Errorf("organization %s: POST /organizations answered %d", registration, status)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("organization %s: the registry answered %d until %w", registration, status, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// call sends one request and decodes a JSON answer (of any status) into out.
func (c Credentials) call(ctx context.Context, method, u, token, contentType string, body io.Reader, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	_ = json.Unmarshal(raw, out) // a body that is not the expected JSON leaves out empty
	return resp.StatusCode, nil
}
