package actions

import (
	"time"

	"github.com/assetregistry/registry/pkg/leader"
)

// actionPartitions is the partitioned actions table (migration 005): 28
// days of UUIDv7 ids a partition, three made ahead. Actions are kept for
// good, so nothing drops a partition.
var actionPartitions = leader.Partitions{Table: "actions", Key: leader.TimeKey{Span: 28 * 24 * time.Hour}, Ahead: 3}

// maintenance is the actions schema's tasks (beside the kit's).
func maintenance() []leader.Task {
	return []leader.Task{actionPartitions.Task(10 * time.Minute)}
}
