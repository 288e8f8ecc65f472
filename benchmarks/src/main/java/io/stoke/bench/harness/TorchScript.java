package io.stoke.bench.harness;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * PyTorch's side of the harness, {@code benchmarks/python/torch_loader.py}, and the Python that
 * runs it: whether it can run here, and with which versions of Python, torch, torchvision, Pillow
 * and numpy.
 */
public final class TorchScript {
    private TorchScript() {}

    /**
     * What {@link #check} found: the versions, or why the script cannot run.
     *
     * @param versions e.g. {@code python 3.11.2, torch 1.13.0, ...}; null when the script cannot run
     * @param whyNot   what the script or the system said (torch_loader.py's advice runs over several
     *                 lines); null when it runs
     */
    public record Check(String versions, String whyNot) {
        public boolean runs() {
            return versions != null;
        }
    }

    /**
     * A loader beside torch's DataLoader, as {@code torch_loader.py --peers} found it.
     *
     * @param module  the module it needs, e.g. {@code torchdata.nodes}
     * @param version its version; null when it cannot be imported
     * @param missing why it cannot be imported; null when it can
     */
    public record Peer(String module, String version, String missing) {}

    /** Runs {@code python script --peers}: which peers this Python can import. Call after a {@link #check} that runs. */
    public static List<Peer> peers(Path python, Path script) throws IOException, InterruptedException {
        String json = runScript(python, script, "--peers").out();
        JsonNode n;
        try {
            n = HarnessJson.MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("torch_loader.py --peers did not print JSON: " + json, e);
        }
        List<Peer> out = new ArrayList<>();
        n.properties()
                .forEach(e -> out.add(new Peer(
                        e.getKey(),
                        e.getValue().hasNonNull("version")
                                ? e.getValue().get("version").asText()
                                : null,
                        e.getValue().hasNonNull("missing")
                                ? e.getValue().get("missing").asText()
                                : null)));
        return out;
    }

    /** Runs {@code python script --versions}: whether the script imports what it needs, and their versions. */
    public static Check check(Path python, Path script) throws IOException, InterruptedException {
        if (script == null || !Files.isRegularFile(script)) {
            return new Check(null, "cannot find benchmarks/python/torch_loader.py (pass --torch-script)");
        }
        if (!Files.isExecutable(python)) {
            return new Check(null, python + " does not exist (pass --python PATH)");
        }
        ScriptRun r = runScript(python, script, "--versions");
        String json = r.out();
        if (r.exitCode() != 0) {
            String why = (r.err() + "\n" + json).strip();
            return new Check(null, why.isEmpty() ? python + " exited with code " + r.exitCode() : why);
        }
        try {
            return new Check(describe(json), null);
        } catch (IllegalArgumentException e) {
            return new Check(null, e.getMessage());
        }
    }

    /** What one of the script's report options printed, and how it exited. */
    private record ScriptRun(String out, String err, int exitCode) {}

    /** Runs the script with one of its report options. */
    private static ScriptRun runScript(Path python, Path script, String option)
            throws IOException, InterruptedException {
        Process p = new ProcessBuilder(
                        python.toString(),
                        script.toString(),
                        "-",
                        "--dataset",
                        "jpeg",
                        "--batch-size",
                        "1",
                        "--workers",
                        "0",
                        "--json",
                        "-",
                        option)
                .start();
        // stdout is the JSON; stderr, read beside it so that neither pipe fills, is the advice on
        // failure and otherwise only warnings (torchvision's, say), which must not reach the JSON.
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> text(p.getErrorStream()));
        String out = text(p.getInputStream());
        p.waitFor();
        return new ScriptRun(out, err.join(), p.exitValue());
    }

    /**
     * {@code {"python": "3.11.2", "torch": "1.13.0"}} as {@code python 3.11.2, torch 1.13.0}, in
     * the script's order.
     */
    static String describe(String versionsJson) {
        JsonNode n;
        try {
            n = HarnessJson.MAPPER.readTree(versionsJson);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("torch_loader.py --versions did not print JSON: " + versionsJson, e);
        }
        if (n == null || !n.isObject()) {
            throw new IllegalArgumentException(
                    "torch_loader.py --versions did not print a JSON object: " + versionsJson);
        }
        List<String> parts = new ArrayList<>();
        n.properties().forEach(e -> parts.add(e.getKey() + " " + e.getValue().asText()));
        return String.join(", ", parts);
    }

    private static String text(InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
