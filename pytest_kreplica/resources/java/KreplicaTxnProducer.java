// The txn workload's transactional producers on Kafka's Java client (docs/clients.md).
// One thread per producer (each its own transactional.id) writes transactions of 1..max
// records, one record at a time (each awaited before the next), over the given partitions,
// and commits or aborts each by a seeded coin. Every step is one JSON line on stdout; the
// Python side (scenarios/java_txn.py) turns the lines into history rows. Times are
// System.nanoTime(), the monotonic clock of the history.
//
// Arguments: bootstrap targets(topic:partition,...) messages(-1: until SIGTERM) seed
//   commitShare maxRecords valueBytes maxRatePerProducer(0: none) producer(process=txnId)...
// Producer settings come as -Dkreplica.<name>=<value> system properties (Kafka's names).
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KreplicaTxnProducer {
    static final AtomicBoolean STOP = new AtomicBoolean();
    static final AtomicInteger SENT = new AtomicInteger();
    static String bootstrap;
    static String[][] targets;
    static int messages, maxRecords, valueBytes;
    static long seed;
    static double commitShare, maxRate;

    public static void main(String[] a) throws Exception {
        bootstrap = a[0];
        String[] parts = a[1].split(",");
        targets = new String[parts.length][];
        for (int i = 0; i < parts.length; i++) targets[i] = parts[i].split(":");
        messages = Integer.parseInt(a[2]);
        seed = Long.parseLong(a[3]);
        commitShare = Double.parseDouble(a[4]);
        maxRecords = Integer.parseInt(a[5]);
        valueBytes = Integer.parseInt(a[6]);
        maxRate = Double.parseDouble(a[7]);
        List<Thread> threads = new ArrayList<>();
        for (int i = 8; i < a.length; i++) {
            String[] p = a[i].split("=", 2);
            int index = i - 8;
            Thread t = new Thread(() -> run(Integer.parseInt(p[0]), p[1], index),
                    "txn-" + p[0]);
            threads.add(t);
            t.start();
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            STOP.set(true);  // SIGTERM: each producer ends its open transaction, then closes
            for (Thread t : threads) {
                try {
                    t.join(60_000);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }));
        for (Thread t : threads) t.join();
    }

    static KafkaProducer<byte[], byte[]> producer(String txnId) {
        Properties props = new Properties();
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("kreplica.")) {
                props.put(name.substring(9), System.getProperty(name));
            }
        }
        props.put("bootstrap.servers", bootstrap);
        props.put("transactional.id", txnId);
        props.put("enable.idempotence", "true");
        props.put("acks", "all");
        KafkaProducer<byte[], byte[]> p =
                new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
        p.initTransactions();  // fences an earlier instance, aborts its open transaction
        return p;
    }

    static void run(int process, String txnId, int index) {
        Random rng = new Random(seed * 1000 + index);
        KafkaProducer<byte[], byte[]> p;
        try {
            p = producer(txnId);
        } catch (RuntimeException e) {
            fatal(process, e);
            return;
        }
        emit("{\"name\":\"ready\",\"process\":" + process + ",\"transactional_id\":"
                + q(txnId) + "}");
        long started = System.nanoTime();
        int n = 0, mine = 0;
        while ((messages < 0 || SENT.get() < messages) && !STOP.get()) {
            n++;
            String txn = String.format("P%d-T%06d", process, n);
            int[] sent = {0};
            boolean usable = transaction(p, process, txn, rng, sent);
            mine += sent[0];
            SENT.addAndGet(sent[0]);
            if (!usable) {  // a fresh producer with the same transactional.id fences this one
                p.close(Duration.ofSeconds(5));
                emit("{\"name\":\"replaced\",\"process\":" + process + "}");
                try {
                    p = producer(txnId);
                } catch (RuntimeException e) {
                    fatal(process, e);
                }
            }
            if (maxRate > 0) {
                long ahead = (long) (mine / maxRate * 1e9) - (System.nanoTime() - started);
                if (ahead > 0) sleep(ahead);
            }
        }
        p.close(Duration.ofSeconds(10));
        emit("{\"name\":\"closed\",\"process\":" + process + "}");
    }

    // One transaction: whether the producer is still usable; sent[0]: records sent.
    static boolean transaction(KafkaProducer<byte[], byte[]> p, int process, String txn,
                               Random rng, int[] sent) {
        boolean commit = rng.nextDouble() < commitShare;
        int count = 1 + rng.nextInt(maxRecords);
        String head = "\"process\":" + process + ",\"txn\":" + q(txn);
        emit("{\"name\":\"begin\"," + head + ",\"ns\":" + System.nanoTime() + "}");
        Long endNs = null;
        try {
            p.beginTransaction();
            for (int i = 0; i < count; i++) {
                String[] t = targets[rng.nextInt(targets.length)];
                String id = txn + "-" + i;
                String rec = head + ",\"id\":" + q(id);
                emit("{\"name\":\"invoke\"," + rec + ",\"topic\":" + q(t[0]) + ",\"partition\":"
                        + t[1] + ",\"ns\":" + System.nanoTime() + "}");
                sent[0]++;
                try {  // one record at a time, as Jepsen's client sends
                    RecordMetadata m = p.send(new ProducerRecord<>(t[0], Integer.parseInt(t[1]),
                            null, value(id))).get(30, TimeUnit.SECONDS);
                    emit("{\"name\":\"acked\"," + rec + ",\"offset\":" + m.offset() + "}");
                } catch (java.util.concurrent.ExecutionException e) {
                    Throwable c = e.getCause();
                    emit("{\"name\":\"send_error\"," + rec + ",\"exception\":"
                            + q(c.getClass().getName()) + ",\"message\":"
                            + q(String.valueOf(c.getMessage())) + "}");
                    throw new IllegalStateException("send of " + id + " failed: " + c, c);
                }
            }
            endNs = System.nanoTime();
            if (commit) p.commitTransaction(); else p.abortTransaction();
            end(head, commit ? "committed" : "aborted", endNs, null);
            return true;
        } catch (Exception e) {
            if (endNs != null && commit) {  // a commit that raised: it may have happened
                end(head, "info", endNs, e.toString());
                return false;
            }
            try {
                p.abortTransaction();
                end(head, "aborted", endNs, e.toString());
                return true;
            } catch (Exception abort) {
                end(head, "info", endNs, e + "; abort: " + abort);
                return false;
            }
        }
    }

    static void fatal(int process, RuntimeException e) {  // a producer that cannot start
        emit("{\"name\":\"fatal\",\"process\":" + process + ",\"error\":" + q(e.toString())
                + "}");
        Runtime.getRuntime().halt(3);  // not exit: the shutdown hook would wait for this thread
    }

    static void end(String head, String outcome, Long endNs, String error) {
        emit("{\"name\":\"end\"," + head + ",\"outcome\":" + q(outcome) + ",\"end_ns\":"
                + endNs + ",\"ns\":" + System.nanoTime() + ",\"error\":"
                + (error == null ? "null" : q(error)) + "}");
    }

    static byte[] value(String id) {  // the id, then one space and padding (history.md)
        StringBuilder v = new StringBuilder(id);
        if (valueBytes > id.length() + 1) {
            v.append(' ').append("x".repeat(valueBytes - id.length() - 1));
        }
        return v.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    static void sleep(long nanos) {
        try {
            TimeUnit.NANOSECONDS.sleep(nanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static String q(String s) {  // a JSON string
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
