package witness

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/services/events/tlog"
)

// Submitter is the leader's job that has the latest checkpoint cosigned
// by every witness that has not cosigned it yet (one attempt per witness a
// run; a witness that fails is asked again at the next run).
func Submitter(log *tlog.Store, st *Store, witnesses []Witness, client *http.Client, logger log.Logger) func(context.Context) {
	return func(ctx context.Context) {
		c, err := log.LatestCheckpoint(ctx)
		if err != nil {
			if !apperr.Is(err, apperr.KindNotFound) && ctx.Err() == nil {
				level.Warn(logger).Log("msg", "reading the checkpoint for the witnesses failed", "err", err)
			}
			return
		}
		for _, w := range witnesses {
			if err := submit(ctx, log, st, w, c, client); err != nil && ctx.Err() == nil {
				level.Warn(logger).Log("msg", "a witness did not cosign the checkpoint; asking again at the next run",
					"witness", w.Key.Name, "size", c.Size, "err", err)
			}
		}
	}
}

// submitTime bounds one witness's answer.
const submitTime = 10 * time.Second

// submit has c cosigned by w unless it is already: the checkpoint, as the
// log signed it, with the consistency proof from the size w has seen. A
// witness that has seen another size (409) says which; the proof from it
// is sent once more.
func submit(ctx context.Context, log *tlog.Store, st *Store, w Witness, c tlog.Checkpoint, client *http.Client) error {
	signed, body := logSigned(c.Note)
	if done, err := st.Cosigned(ctx, w.Key.Name, c.Size, signed); err != nil || done {
		return err
	}
	seen, err := st.Seen(ctx, w.Key.Name)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		if seen > c.Size {
			return fmt.Errorf("the witness has seen a checkpoint of %d leaves, more than the latest (%d): another log of the same name?", seen, c.Size)
		}
		proof, err := log.ConsistencyProof(ctx, seen, c.Size)
		if seen == 0 {
			proof, err = nil, nil
		}
		if err != nil {
			return err
		}
		status, answer, err := post(ctx, client, w.URL+"/add-checkpoint", addCheckpoint(seen, proof, signed))
		if err != nil {
			return err
		}
		switch {
		case status == http.StatusOK:
			return keep(ctx, st, w, c.Size, signed, body, answer)
		case status == http.StatusConflict && attempt == 0:
			size, err := strconv.ParseUint(strings.TrimSpace(string(answer)), 10, 64)
			if err != nil {
				return fmt.Errorf("409 without the size the witness has seen: %.100q", answer)
			}
			if err := st.SetSeen(ctx, w.Key.Name, size); err != nil {
				return err
			}
			seen = size
		default:
			return fmt.Errorf("add-checkpoint answered %d: %.200q", status, answer)
		}
	}
}

// keep checks the witness's answer, signature lines of which one is its
// cosignature of body (of the checkpoint signed), and keeps that line.
func keep(ctx context.Context, st *Store, w Witness, size uint64, signed, body string, answer []byte) error {
	for _, line := range strings.SplitAfter(string(answer), "\n") {
		if !strings.HasPrefix(line, "— "+w.Key.Name+" ") {
			continue
		}
		if _, err := w.Key.Verify(body, line); err != nil {
			return err
		}
		if !strings.HasSuffix(line, "\n") {
			line += "\n"
		}
		return st.Keep(ctx, w.Key.Name, size, signed, line)
	}
	return fmt.Errorf("the answer holds no signature line of the witness's key: %.200q", answer)
}

// logSigned is a served checkpoint as the log signed it (its body and the
// log's own signature lines, without the cosignatures), and its body.
func logSigned(note string) (signed, body string) {
	body, sigs, _ := strings.Cut(note, "\n\n")
	body += "\n"
	origin, _, _ := strings.Cut(body, "\n")
	signed = body + "\n"
	for _, line := range strings.SplitAfter(sigs, "\n") {
		if strings.HasPrefix(line, "— "+origin+" ") {
			signed += line
		}
	}
	return signed, body
}

// addCheckpoint is the body of an add-checkpoint request (C2SP
// tlog-witness): "old <size>", the proof's hashes in base64 one a line, a
// blank line, the signed checkpoint.
func addCheckpoint(old uint64, proof [][]byte, signed string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", old)
	for _, h := range proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
	}
	b.WriteString("\n" + signed)
	return b.Bytes()
}

// post sends body to u and reads at most 64 KiB of the answer.
func post(ctx context.Context, client *http.Client, u string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, submitTime)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, answer, err
}
