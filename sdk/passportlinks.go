package registry

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// Passport links: capability URLs that hand an asset's passport to anyone
// who holds one, without a token, until deleted or expired.

// PassportLink is a passport link. URL (with its token) is set only in
// the answer of CreatePassportLink: the registry keeps the token's hash
// alone, so keep it (print it as a QR code).
type PassportLink struct {
	ID            string     `json:"id"`
	AssetID       string     `json:"asset_id"`
	URL           string     `json:"url,omitempty"`
	ExpiresAt     *time.Time `json:"expires_at"`
	CreatedAt     time.Time  `json:"created_at"`
	CreatedBy     string     `json:"created_by"`
	FetchCount    int64      `json:"fetch_count"`
	LastFetchedAt *time.Time `json:"last_fetched_at"`
}

// PassportLinkInput is a new link: when it expires (nil: never).
type PassportLinkInput struct {
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// CreatePassportLink makes a link to the asset's passport.
func (c *Client) CreatePassportLink(ctx context.Context, assetID string, in PassportLinkInput, opts ...CallOption) (*PassportLink, error) {
	return create[PassportLink](ctx, c, "/assets/"+url.PathEscape(assetID)+"/passport_links", in, opts)
}

// ListPassportLinks pages through the asset's links, oldest first.
func (c *Client) ListPassportLinks(ctx context.Context, assetID string) iter.Seq2[PassportLink, error] {
	return list[PassportLink](ctx, c, "/assets/"+url.PathEscape(assetID)+"/passport_links", nil)
}

// DeletePassportLink deletes one of the asset's links: its URL answers 404
// from then on.
func (c *Client) DeletePassportLink(ctx context.Context, assetID, linkID string, opts ...CallOption) error {
	return c.delete(ctx, "/assets/"+url.PathEscape(assetID)+"/passport_links/"+url.PathEscape(linkID), nil, opts)
}

// FetchPassport writes the passport a link's URL answers to w, asking it
// with no token (anyone holding the URL may: it needs no client of the
// registry). Check what it wrote with VerifyPassport.
func FetchPassport(ctx context.Context, linkURL string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, linkURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("registry: %s answered %d: %s", linkURL, resp.StatusCode, body)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}
