// The txn_pipeline workload's copier on Kafka's Java client (docs/clients.md): Kafka's
// exactly-once read-process-write loop. A read_committed consumer in a group of its own
// polls a batch; in one transaction a transactional producer writes a copy of each record
// into the output topic (same partition; the copy's value is its own id, its line names
// the source id), awaits every copy, commits the consumer's next positions with
// sendOffsetsToTransaction and commits, or aborts by a seeded coin and rewinds to the
// batch's first offsets. After a failed transaction both clients are rebuilt: the new
// producer (same transactional.id) fences the old one, the new consumer resumes at the
// group's committed positions. Every step is one JSON line on stdout (Jackson, on Kafka's
// tools classpath); scenarios/java_pipeline.py turns them into history rows. Times are
// System.nanoTime(), the monotonic clock of the history. Runs until SIGTERM.
//
// Arguments: bootstrap inputs(topic,...) output groupId transactionalId txnPrefix seed
//   abortShare idleMs valueBytes. Client settings come as -Dkreplica.producer.<name>=<value> and
//   -Dkreplica.consumer.<name>=<value> system properties (Kafka's names).
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KreplicaTxnCopier {
    static final ObjectMapper JSON = new ObjectMapper();
    static volatile boolean stop;
    static String bootstrap, output, groupId, txnId, txnPrefix;
    static List<String> inputs;
    static long idleMs;
    static int valueBytes;
    static KafkaProducer<byte[], byte[]> producer;
    static KafkaConsumer<byte[], byte[]> consumer;

    public static void main(String[] a) throws Exception {
        bootstrap = a[0];
        inputs = Arrays.asList(a[1].split(","));
        output = a[2];
        groupId = a[3];
        txnId = a[4];
        txnPrefix = a[5];
        Random rng = new Random(Long.parseLong(a[6]));
        double abortShare = Double.parseDouble(a[7]);
        idleMs = Long.parseLong(a[8]);
        valueBytes = Integer.parseInt(a[9]);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop = true;  // SIGTERM: the open transaction ends, then both clients close
            try {
                main.join(60_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        int n = 0;
        long lastRead = System.nanoTime();
        while (!stop) {
            try {
                if (producer == null) {
                    build();
                    lastRead = System.nanoTime();
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    if (System.nanoTime() - lastRead > idleMs * 1_000_000L) {
                        stuck();
                        lastRead = System.nanoTime();
                    }
                    continue;
                }
                lastRead = System.nanoTime();
                n++;
                String outcome = transaction(records, n, rng.nextDouble() >= abortShare);
                if (outcome.equals("aborted")) rewind(records);
                else if (outcome.equals("info")) crash("after a failed transaction");
            } catch (Exception e) {  // a broken client is rebuilt
                crash(e.toString());
            }
        }
        close();
        emit(line("closed"));
    }

    // A fresh producer first (fencing the old one, settling its open transaction), then a
    // consumer that resumes at the group's committed positions.
    static void build() {
        producer = new KafkaProducer<>(props("producer", Map.of("bootstrap.servers", bootstrap,
                "transactional.id", txnId, "enable.idempotence", "true", "acks", "all")),
                new ByteArraySerializer(), new ByteArraySerializer());
        producer.initTransactions();
        consumer = new KafkaConsumer<>(props("consumer", Map.of("bootstrap.servers", bootstrap,
                "group.id", groupId, "enable.auto.commit", "false", "auto.offset.reset",
                "earliest", "isolation.level", "read_committed")),
                new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.subscribe(inputs);
        Map<String, Object> ready = line("started");
        ready.put("transactional_id", txnId);
        emit(ready);
    }

    // One copy transaction: committed, aborted (the clients usable) or info (rebuild them).
    static String transaction(ConsumerRecords<byte[], byte[]> records, int n, boolean commit) {
        String txn = String.format("%s-T%06d", txnPrefix, n);
        Map<TopicPartition, OffsetAndMetadata> next = new LinkedHashMap<>();
        List<Object> read = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : records) {
            next.put(new TopicPartition(r.topic(), r.partition()),
                    new OffsetAndMetadata(r.offset() + 1));
            read.add(List.of(r.topic(), r.partition(), r.offset(), id(r.value())));
        }
        Map<String, Object> batch = line("batch", txn);
        batch.put("poll", n);
        batch.put("generation", consumer.groupMetadata().generationId());
        batch.put("records", read);
        emit(batch);
        emit(line("begin", txn));
        Long endNs = null;
        try {
            producer.beginTransaction();
            List<Future<RecordMetadata>> copies = new ArrayList<>();
            int i = 0;
            for (ConsumerRecord<byte[], byte[]> r : records) {
                String cid = txn + "-" + i++;
                Map<String, Object> invoke = line("invoke", txn);
                invoke.putAll(Map.of("id", cid, "topic", output, "partition", r.partition(),
                        "source", id(r.value())));
                emit(invoke);
                copies.add(producer.send(new ProducerRecord<>(output, r.partition(), null,
                        value(cid))));
            }
            awaitCopies(txn, copies);
            producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
            endNs = System.nanoTime();
            if (commit) producer.commitTransaction(); else producer.abortTransaction();
            return end(txn, commit ? "committed" : "aborted", endNs, null, next);
        } catch (Exception e) {
            if (endNs != null && commit) {  // a commit that raised: it may have happened
                return end(txn, "info", endNs, e.toString(), next);
            }
            try {
                producer.abortTransaction();
                return end(txn, "aborted", endNs, e.toString(), next);
            } catch (Exception abort) {
                return end(txn, "info", endNs, e + "; abort: " + abort, next);
            }
        }
    }

    // Every copy's acknowledgement before the commit; the first failure ends the transaction.
    static void awaitCopies(String txn, List<Future<RecordMetadata>> copies) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (int i = 0; i < copies.size(); i++) {
            Map<String, Object> answer = line("acked", txn);
            answer.put("id", txn + "-" + i);
            try {
                answer.put("offset", copies.get(i).get(Math.max(0, deadline - System.nanoTime()),
                        TimeUnit.NANOSECONDS).offset());
                emit(answer);
            } catch (java.util.concurrent.ExecutionException e) {
                Throwable c = e.getCause();
                answer.put("name", "send_error");
                answer.put("exception", c.getClass().getName());
                answer.put("message", String.valueOf(c.getMessage()));
                emit(answer);
                throw new IllegalStateException("copy " + txn + "-" + i + " failed: " + c, c);
            }
        }
    }

    static String end(String txn, String outcome, Long endNs, String error,
                      Map<TopicPartition, OffsetAndMetadata> next) {
        Map<String, Object> end = line("end", txn);
        List<Object> offsets = new ArrayList<>();
        next.forEach((tp, o) -> offsets.add(List.of(tp.topic(), tp.partition(), o.offset())));
        end.put("outcome", outcome);
        end.put("end_ns", endNs);
        end.put("error", error);
        end.put("offsets", offsets);
        emit(end);
        return outcome;
    }

    // After an abort: back to the batch's first offsets, read anew as a new incarnation.
    static void rewind(ConsumerRecords<byte[], byte[]> records) {
        for (TopicPartition tp : records.partitions()) {
            consumer.seek(tp, records.records(tp).get(0).offset());
        }
        emit(line("rewound"));
    }

    // Nothing read for idleMs: a consumer without partitions, or behind the last stable
    // offset of one it holds, is stuck and rebuilt.
    static void stuck() {
        var held = consumer.assignment();
        if (held.isEmpty()) throw new IllegalStateException("no partitions assigned for "
                + idleMs + " ms");
        Map<TopicPartition, Long> ends = consumer.endOffsets(held, Duration.ofSeconds(10));
        for (TopicPartition tp : held) {
            if (consumer.position(tp, Duration.ofSeconds(10)) < ends.get(tp)) {
                throw new IllegalStateException("nothing read for " + idleMs + " ms below "
                        + tp + "'s last stable offset " + ends.get(tp));
            }
        }
    }

    static void crash(String why) {
        Map<String, Object> crash = line("crash");
        crash.put("why", why);
        emit(crash);
        close();
        try {
            Thread.sleep(500);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void close() {
        if (consumer != null) {
            try {
                consumer.close(Duration.ofSeconds(10));
            } catch (RuntimeException e) {
                System.err.println("consumer close: " + e);
            }
        }
        if (producer != null) {
            try {
                producer.close(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                System.err.println("producer close: " + e);
            }
        }
        consumer = null;
        producer = null;
    }

    static Properties props(String client, Map<String, String> fixed) {
        Properties props = new Properties();
        String prefix = "kreplica." + client + ".";
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith(prefix)) {
                props.put(name.substring(prefix.length()), System.getProperty(name));
            }
        }
        props.putAll(fixed);
        return props;
    }

    static String id(byte[] value) {  // a record's id: its value up to the first space
        String v = value == null ? "" : new String(value, StandardCharsets.UTF_8);
        int space = v.indexOf(' ');
        return space < 0 ? v : v.substring(0, space);
    }

    static byte[] value(String id) {  // the id, then one space and padding (history.md)
        String pad = valueBytes > id.length() + 1 ? " " + "x".repeat(valueBytes - id.length() - 1)
                : "";
        return (id + pad).getBytes(StandardCharsets.UTF_8);
    }

    static Map<String, Object> line(String name, String txn) {
        Map<String, Object> line = line(name);
        line.put("txn", txn);
        line.put("ns", System.nanoTime());
        return line;
    }

    static Map<String, Object> line(String name) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("name", name);
        return line;
    }

    static synchronized void emit(Map<String, Object> line) {
        try {
            System.out.println(JSON.writeValueAsString(line));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        System.out.flush();
    }
}
