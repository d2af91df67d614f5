package headgate

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate/internal/redistest"
)

// TestWorkflowListingRefusesForeignCursor: Query and ListWorkflows take only a cursor
// they printed. A string that is base64 but not a position of theirs (a mistyped
// cursor, another listing's) is *InvalidError of the cursor, not a silent empty page
// (it was read as a position past every row); their own cursors still page.
func TestWorkflowListingRefusesForeignCursor(t *testing.T) {
	redistest.OnBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s, must := frozenStore(t, rdb)
		for i := range 3 {
			id := fmt.Sprintf("w%d", i)
			_, err := s.StartWorkflow(ctx, WorkflowStart{WorkflowID: id, WorkflowType: "t"})
			must(err)
			must(s.RecordVisibility(ctx, VisibilityRecord{WorkflowID: id, RunID: "r", WorkflowType: "t", Status: WorkflowRunning}))
		}
		rows, next, err := s.Query(ctx, WorkflowFilter{}, "", 2)
		must(err)
		if len(rows) != 2 || next == "" {
			t.Fatalf("first page: %d rows, next %q", len(rows), next)
		}
		rows, _, err = s.Query(ctx, WorkflowFilter{}, next, 2)
		must(err)
		if len(rows) != 1 || rows[0].WorkflowID != "w2" {
			t.Fatalf("second page: %+v", rows)
		}
		page, err := s.ListWorkflows(ctx, WorkflowListRequest{PageSize: 2})
		must(err)
		page, err = s.ListWorkflows(ctx, WorkflowListRequest{PageSize: 2, PageToken: page.NextPageToken})
		must(err)
		if len(page.Records) != 1 || page.Records[0].WorkflowID != "w2" {
			t.Fatalf("ListWorkflows second page: %+v", page.Records)
		}
		b64 := base64.RawURLEncoding.EncodeToString
		for _, c := range []string{"zzz", b64([]byte("w1")), b64([]byte("123\x1fw1")), b64([]byte("001796670516819\x1f")),
			b64([]byte("00000179667051x\x1fw1"))} {
			var inv *InvalidError
			if rows, _, err := s.Query(ctx, WorkflowFilter{}, c, 2); !errors.As(err, &inv) || inv.Field != "cursor" {
				t.Errorf("Query with cursor %q: %d rows, %v; want *InvalidError of cursor", c, len(rows), err)
			}
			if _, err := s.ListWorkflows(ctx, WorkflowListRequest{PageSize: 2, PageToken: c}); !errors.As(err, &inv) || inv.Field != "cursor" {
				t.Errorf("ListWorkflows with token %q: %v; want *InvalidError of cursor", c, err)
			}
		}
	})
}
