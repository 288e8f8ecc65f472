package io.stoke.gpu;

import io.stoke.ffm.cuda.Nvjpeg;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Where nvJPEG ({@code libnvjpeg.so}) is on this machine, for the GPU decode. nvJPEG is not part of
 * the driver: it comes with the CUDA toolkit, the {@code nvidia-nvjpeg} wheel and torchvision's
 * CUDA wheels (which bundle a copy under {@code torchvision.libs/}). Looked for, in this order:
 * <ol>
 *   <li>{@value #ENV}, a file: when set, only there (a wrong path is an error, not a search elsewhere);
 *   <li>the CUDA toolkit: {@code $CUDA_HOME}, {@code $CUDA_PATH}, {@code /usr/local/cuda}, each
 *       {@code lib64/} and {@code targets/x86_64-linux/lib/};
 *   <li>the active Python environment ({@code $VIRTUAL_ENV}, {@code $CONDA_PREFIX}, each
 *       {@code lib/python3.*}{@code /site-packages}), then the site-packages of the Python that
 *       started Stoke ({@value #SITE_PACKAGES_ENV}): in each, the wheels' {@code nvidia/cu13/lib/},
 *       {@code nvidia/nvjpeg/lib/} and {@code torchvision.libs/}.
 * </ol>
 * In each folder, the newest {@code libnvjpeg*.so.N} (torchvision's copy carries a hash in its
 * name). Only files are looked at: nothing is loaded here.
 */
public final class NvjpegLibrary {
    /** The environment variable naming the library file to use. */
    public static final String ENV = "STOKE_NVJPEG";

    /** The system property naming it, which comes before {@value #ENV} (as {@code -Dstoke.cuda.path} for the driver). */
    public static final String PATH_PROPERTY = "stoke.nvjpeg.path";

    /**
     * The site-packages folders of the Python that started Stoke ({@code python -m stoke},
     * {@code stoke.DataLoader}), joined by ':': set by Stoke's Python package, for a Python that is
     * no venv or conda environment (a system or user install of torch).
     */
    public static final String SITE_PACKAGES_ENV = "STOKE_PYTHON_SITE_PACKAGES";

    private NvjpegLibrary() {}

    /**
     * A library file, or why there is none.
     *
     * @param path the file, when found
     * @param where which place it came from ("STOKE_NVJPEG", "the CUDA toolkit at ...", "torchvision's bundled copy in ...")
     * @param missing when not found: one sentence saying where it was looked for and how to provide it
     */
    public record Found(Optional<Path> path, String where, String missing) {}

    /** Looks in this process's environment. */
    public static Found find() {
        return find(System.getenv());
    }

    /** Looks with {@code env} as the environment, and in {@code /usr/local/cuda}. */
    public static Found find(Map<String, String> env) {
        return find(env, List.of(Path.of("/usr/local/cuda")));
    }

    /**
     * nvJPEG bound from where {@link #find()} says, or why not.
     *
     * @param nvjpeg the bound library, when one was found and loads
     * @param description one line: its version, file and where that came from; else why there is none
     */
    public record Loaded(Optional<Nvjpeg> nvjpeg, String description) {}

    /** {@link #load(Map)} in this process's environment; {@value #PATH_PROPERTY}, where set, comes before everything. */
    public static Loaded load() {
        String property = System.getProperty(PATH_PROPERTY);
        if (property != null && !property.isBlank()) {
            Path p = Path.of(property);
            String where = "-D" + PATH_PROPERTY;
            return bind(
                    Files.isRegularFile(p)
                            ? new Found(Optional.of(p), where, null)
                            : new Found(Optional.empty(), where, where + "=" + property + " is not a file"));
        }
        return load(System.getenv());
    }

    /** Finds and binds nvJPEG (which needs no GPU); never throws. */
    public static Loaded load(Map<String, String> env) {
        return bind(find(env));
    }

    private static Loaded bind(Found f) {
        if (f.path().isEmpty()) {
            return new Loaded(Optional.empty(), f.missing());
        }
        Path p = f.path().get();
        try {
            Nvjpeg n = Nvjpeg.load(p.toString());
            return new Loaded(Optional.of(n), "nvJPEG " + n.version() + " from " + p + " (" + f.where() + ")");
        } catch (RuntimeException | LinkageError e) {
            return new Loaded(Optional.empty(), p + " (" + f.where() + ") cannot be used as nvJPEG: " + e.getMessage());
        }
    }

    /** {@link #find(Map)} with {@code defaultToolkits} searched after {@code $CUDA_HOME} and {@code $CUDA_PATH}. */
    static Found find(Map<String, String> env, List<Path> defaultToolkits) {
        String named = env.get(ENV);
        if (named != null && !named.isBlank()) {
            Path p = Path.of(named);
            return Files.isRegularFile(p)
                    ? new Found(Optional.of(p), ENV, null)
                    : new Found(Optional.empty(), ENV, ENV + "=" + named + " is not a file");
        }
        List<String> looked = new ArrayList<>();
        for (Path home : toolkits(env, defaultToolkits)) {
            for (String lib : List.of("lib64", "targets/x86_64-linux/lib")) {
                Path dir = home.resolve(lib);
                looked.add(dir.toString());
                Optional<Path> p = newest(dir);
                if (p.isPresent()) {
                    return new Found(p, "the CUDA toolkit at " + home, null);
                }
            }
        }
        for (Path site : sitePackages(env)) {
            for (String sub : List.of("nvidia/cu13/lib", "nvidia/nvjpeg/lib", "torchvision.libs")) {
                Path dir = site.resolve(sub);
                looked.add(dir.toString());
                Optional<Path> p = newest(dir);
                if (p.isPresent()) {
                    String what = sub.equals("torchvision.libs") ? "torchvision's bundled copy" : "the nvidia wheel";
                    return new Found(p, what + " in " + site, null);
                }
            }
        }
        return new Found(
                Optional.empty(),
                null,
                "no libnvjpeg found (looked in " + (looked.isEmpty() ? "no folder" : String.join(", ", looked))
                        + "): install the CUDA toolkit, the nvidia-nvjpeg wheel or torchvision's CUDA wheel, or point "
                        + ENV + " at libnvjpeg.so");
    }

    private static List<Path> toolkits(Map<String, String> env, List<Path> defaults) {
        Set<Path> homes = new LinkedHashSet<>();
        for (String var : List.of("CUDA_HOME", "CUDA_PATH")) {
            String v = env.get(var);
            if (v != null && !v.isBlank()) {
                homes.add(Path.of(v));
            }
        }
        homes.addAll(defaults);
        return List.copyOf(homes);
    }

    private static List<Path> sitePackages(Map<String, String> env) {
        Set<Path> sites = new LinkedHashSet<>();
        for (String var : List.of("VIRTUAL_ENV", "CONDA_PREFIX")) {
            String v = env.get(var);
            if (v == null || v.isBlank()) {
                continue;
            }
            Path lib = Path.of(v, "lib");
            if (!Files.isDirectory(lib)) {
                continue;
            }
            try (DirectoryStream<Path> pythons = Files.newDirectoryStream(lib, "python3*")) {
                for (Path py : pythons) {
                    Path site = py.resolve("site-packages");
                    if (Files.isDirectory(site)) {
                        sites.add(site);
                    }
                }
            } catch (IOException e) {
                // An unreadable environment is one with nothing found in it; the sentence lists where was looked.
            }
        }
        String python = env.get(SITE_PACKAGES_ENV);
        if (python != null) {
            for (String dir : python.split(":")) {
                if (!dir.isBlank() && Files.isDirectory(Path.of(dir))) {
                    sites.add(Path.of(dir));
                }
            }
        }
        return List.copyOf(sites);
    }

    /** The newest {@code libnvjpeg*.so.N} file in {@code dir}, by N then name. */
    static Optional<Path> newest(Path dir) {
        if (!Files.isDirectory(dir)) {
            return Optional.empty();
        }
        List<Path> libs = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "libnvjpeg*.so*")) {
            for (Path f : files) {
                if (Files.isRegularFile(f) && soVersion(f) >= 0) {
                    libs.add(f);
                }
            }
        } catch (IOException e) {
            return Optional.empty();
        }
        return libs.stream()
                .max(Comparator.comparingInt(NvjpegLibrary::soVersion)
                        .thenComparing(p -> p.getFileName().toString()));
    }

    /** N of {@code libnvjpeg*.so.N[.M...]}, 0 for a bare {@code .so}, -1 for anything else (a static archive, a stub). */
    static int soVersion(Path file) {
        String name = file.getFileName().toString();
        int so = name.indexOf(".so");
        if (so < 0 || !name.startsWith("libnvjpeg")) {
            return -1;
        }
        String rest = name.substring(so + 3);
        if (rest.isEmpty()) {
            return 0;
        }
        if (rest.charAt(0) != '.') {
            return -1;
        }
        int end = rest.indexOf('.', 1);
        try {
            return Integer.parseInt(end < 0 ? rest.substring(1) : rest.substring(1, end));
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
