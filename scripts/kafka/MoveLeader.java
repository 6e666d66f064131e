/*
 * Moves the leader of one partition to a chosen broker, without stopping anything, the way an
 * operator does it with kafka-reassign-partitions.sh and kafka-leader-election.sh:
 *   1. alterPartitionReassignments (KIP-455) to the new replica list, whose first replica is the
 *      "preferred" one: either the same replica set reordered so the target comes first (no data
 *      moves), or an explicit list (replicas added are copied, replicas left out are deleted; a
 *      leader left out hands over to a replica of the new list),
 *   2. waits until the reassignment is done (listPartitionReassignments empty, describeTopics
 *      shows the new list),
 *   3. electLeaders(PREFERRED) for the partition (KIP-460), retried while the target is not in the
 *      ISR yet (PREFERRED_LEADER_NOT_AVAILABLE), until describeTopics shows the target as leader.
 * KafkaJS has no electLeaders, and the Kafka 4.x command classes live in kafka-tools (heavy: Jetty,
 * Jersey), so this runs the Java Admin client of kafka-clients, already among the broker jars.
 *
 * Usage (Java 11+ runs a single source file, compiled in memory, so a JDK rather than a JRE; see
 * scripts/kafka/kafka.sh move-leader and reassign):
 *   java -cp "<jars>/*" MoveLeader.java BOOTSTRAP TOPIC PARTITION BROKER_ID [TIMEOUT_MS]
 *       keep the replica set, make BROKER_ID its first replica and the leader
 *   java -cp "<jars>/*" MoveLeader.java BOOTSTRAP TOPIC PARTITION ID,ID,... [TIMEOUT_MS]
 *       make ID,ID,... the replica list (in that order), the first one the leader
 * Prints one JSON line {"topic","partition","leader","replicas","isr","elected"} to stdout and exits 0,
 * or prints the reason to stderr and exits 1 (a single target that is not a replica, timeout after
 * TIMEOUT_MS, default 90000), 2 on bad arguments.
 */
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.PreferredLeaderNotAvailableException;

public class MoveLeader {
  public static void main(String[] args) throws Exception {
    if (args.length < 4 || args.length > 5) {
      System.err.println("usage: MoveLeader BOOTSTRAP TOPIC PARTITION BROKER_ID|ID,ID,... [TIMEOUT_MS]");
      System.exit(2);
    }
    String topic = args[1];
    TopicPartition tp = new TopicPartition(topic, Integer.parseInt(args[2]));
    List<Integer> wanted = new ArrayList<>();
    for (String id : args[3].split(",")) wanted.add(Integer.parseInt(id.trim()));
    int target = wanted.get(0);
    long deadline = System.currentTimeMillis() + (args.length == 5 ? Long.parseLong(args[4]) : 90_000L);
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(AdminClientConfig.CLIENT_ID_CONFIG, "replayable-move-leader");
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
    try (Admin admin = Admin.create(props)) {
      TopicPartitionInfo info = describe(admin, tp);
      List<Integer> replicas = ids(info.replicas());
      List<Integer> reordered = wanted;
      if (wanted.size() == 1) {
        if (!replicas.contains(target)) {
          fail("broker " + target + " is not a replica of " + tp + " (replicas " + replicas + ")");
        }
        reordered = new ArrayList<>();
        reordered.add(target);
        for (int id : replicas) if (id != target) reordered.add(id);
      }
      if (!reordered.equals(replicas)) {
        admin
            .alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(reordered))))
            .all()
            .get();
        // Same replica set: done at once; new replicas: done once they caught up and joined the ISR.
        while (!admin.listPartitionReassignments(Set.of(tp)).reassignments().get().isEmpty()
            || !ids(describe(admin, tp).replicas()).equals(reordered)) {
          check(deadline, "the reassignment of " + tp + " to " + reordered);
          Thread.sleep(100);
        }
      }
      boolean elected = false;
      for (; ; ) {
        info = describe(admin, tp);
        if (info.leader() != null && info.leader().id() == target) break;
        try {
          Optional<Throwable> result = admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get().get(tp);
          if (result != null && result.isPresent()) throw new ExecutionException(result.get());
          elected = true;
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          // Not needed: the target already leads (metadata may lag). Not available: not in the ISR yet.
          if (!(cause instanceof ElectionNotNeededException)
              && !(cause instanceof PreferredLeaderNotAvailableException)) {
            throw e;
          }
        }
        check(deadline, "broker " + target + " to lead " + tp + " (ISR " + ids(info.isr()) + ")");
        Thread.sleep(200);
      }
      System.out.printf(
          "{\"topic\":\"%s\",\"partition\":%d,\"leader\":%d,\"replicas\":%s,\"isr\":%s,\"elected\":%b}%n",
          topic, tp.partition(), info.leader().id(), ids(info.replicas()), ids(info.isr()), elected);
    }
  }

  private static TopicPartitionInfo describe(Admin admin, TopicPartition tp) throws Exception {
    TopicDescription d = admin.describeTopics(List.of(tp.topic())).allTopicNames().get().get(tp.topic());
    for (TopicPartitionInfo p : d.partitions()) if (p.partition() == tp.partition()) return p;
    fail("topic " + tp.topic() + " has no partition " + tp.partition());
    return null;
  }

  private static List<Integer> ids(List<Node> nodes) {
    return nodes.stream().map(Node::id).collect(Collectors.toList());
  }

  private static void check(long deadline, String what) {
    if (System.currentTimeMillis() > deadline) fail("timed out waiting for " + what);
  }

  private static void fail(String message) {
    System.err.println("move-leader: " + message);
    System.exit(1);
  }
}
