/**
 * Which topics `status` and `rebuild` act on when no --topic is given (regression: they took the
 * projection's default topic even when the group had consumed another topic, so a rebuild dry run
 * listed someone else's topic and status showed the wrong lag).
 */
import { describe, expect, it } from "vitest";
import { projectionTopics } from "../../../src/replay/projectionTopics.js";
import { recordProjectionTopics } from "../../../src/sql/projectionTopics.js";
import { uniqueName, useStack } from "../../helpers/stack.js";

const stack = useStack();

describe("projectionTopics", () => {
  it("prefers the group's committed and the projection's checkpointed topics over the defaults", async () => {
    const own = uniqueName("own");
    const checkpointed = uniqueName("cp");
    const fallback = uniqueName("default");
    for (const topic of [own, checkpointed, fallback]) await stack.admin.createTopic(topic, 1);
    const projection = { name: "ledger", defaultTopics: [fallback] };
    const group = uniqueName("g");

    expect(await projectionTopics(stack.admin, stack.db.pool, projection, group, [])).toEqual([fallback]);
    expect(await projectionTopics(stack.admin, stack.db.pool, projection, group, ["x"])).toEqual(["x"]);

    await stack.admin.setOffsets(group, own, [{ partition: 0, offset: "0" }]);
    await stack.db.pool.query(
      "INSERT INTO replayable.checkpoints (projection, topic, partition, next_offset) VALUES ('ledger', $1, 0, 0)",
      [checkpointed],
    );
    expect(await projectionTopics(stack.admin, stack.db.pool, projection, group, [])).toEqual(
      [own, checkpointed].sort(),
    );
  });

  it("adds the topics a member of the projection consumed, with no record applied or committed there yet", async () => {
    const consumed = uniqueName("consumed");
    const fallback = uniqueName("default");
    const projection = { name: uniqueName("p"), defaultTopics: [fallback] };
    const group = uniqueName("g");
    await recordProjectionTopics(stack.db.pool, projection.name, [consumed]);
    await recordProjectionTopics(stack.db.pool, projection.name, [consumed]);
    expect(await projectionTopics(stack.admin, stack.db.pool, projection, group, [])).toEqual([consumed]);
  });
});
