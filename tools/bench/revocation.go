package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// RevocationRowName is the revocation row's name.
const RevocationRowName = "client deleted → its token refused · gateway"

// RevocationRow: each call is a client made and its token verified and
// remembered by the gateway (off the clock), then, timed, the client
// deleted as `idp client delete` deletes it and the token sent to the
// gateway every 5 ms until it is refused (401). Its p50 and p99 are how
// long a revocation takes to reach the gateway: the verifiers' poll of the
// token validity list (oidc.token-validity-interval, 1 s) and a read.
var RevocationRow = Row{Name: RevocationRowName, Via: "gateway", MinWindow: 5 * time.Second,
	Op: func(e *Env) (Op, error) {
		var mu sync.Mutex
		pending := map[int][2]string{} // worker → its client and token
		return Op{
			Prepare: func(ctx context.Context, w *Worker) error {
				id := fmt.Sprintf("bench-revoked-%s-%d", w.Tag, w.N)
				token, err := e.clientToken(ctx, id, "registry:read")
				if err != nil {
					return err
				}
				// The client is newer than the gateway's token validity
				// list: its first call makes the gateway read the list, and
				// a read that fails is a 503 to try again, as a client would.
				status, err := e.getWith(ctx, token)
				for try := 1; err == nil && status == http.StatusServiceUnavailable && try < 5; try++ {
					time.Sleep(200 * time.Millisecond)
					status, err = e.getWith(ctx, token)
				}
				if err != nil || status != http.StatusOK {
					return fmt.Errorf("the fresh token: %d %v", status, err)
				}
				mu.Lock()
				pending[w.ID] = [2]string{id, token}
				mu.Unlock()
				return nil
			},
			Do: func(ctx context.Context, w *Worker) error {
				mu.Lock()
				p := pending[w.ID]
				mu.Unlock()
				if _, err := e.Reference.Exec(ctx, `DELETE FROM idp.clients WHERE client_id = $1`, p[0]); err != nil {
					return fmt.Errorf("delete the client: %w", err)
				}
				for {
					status, err := e.getWith(ctx, p[1])
					if err != nil {
						return err
					}
					if status == http.StatusUnauthorized {
						return nil
					}
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(5 * time.Millisecond):
					}
				}
			},
		}, nil
	}}

// getWith sends GET /organizations?limit=1 through the gateway with token
// and returns the status.
func (e *Env) getWith(ctx context.Context, token string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.Stack.RegistryURL+"/organizations?limit=1", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
