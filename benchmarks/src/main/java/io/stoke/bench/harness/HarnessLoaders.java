package io.stoke.bench.harness;

import java.util.List;
import java.util.Map;

/**
 * The loaders the harness times, by the names {@code --loaders}, the CSV files and the run files
 * use: Stoke, and the PyTorch-side loaders that {@code benchmarks/python/torch_loader.py} runs.
 * PyTorch's PIL path is the reference for pixels (torchvision's recipe's default backend); its
 * tensor path is its fastest on the CPU, and the one ratios are first given against.
 */
public final class HarnessLoaders {
    public static final String STOKE = "stoke";
    /** torch's DataLoader over torchvision's ImageFolder and PIL transforms. */
    public static final String PYTORCH = "pytorch";
    /** The same DataLoader, files decoded by torchvision.io.decode_image, v2 transforms on uint8 tensors. */
    public static final String PYTORCH_TENSOR = "pytorch-tensor";
    /** torchdata.nodes: the tensor path mapped by a ParallelMapper of threads. */
    public static final String TORCHDATA_NODES = "torchdata-nodes";

    /** Every loader, in the order the summary's columns and the sweep run them. */
    public static final List<String> ALL = List.of(STOKE, PYTORCH, PYTORCH_TENSOR, TORCHDATA_NODES);

    /** The loaders torch_loader.py runs. */
    public static final List<String> TORCH_SIDE = List.of(PYTORCH, PYTORCH_TENSOR, TORCHDATA_NODES);

    /**
     * The loader each peer module (as torch_loader.py's {@code --peers} names it) is run as; a peer
     * not here has no loader in the harness.
     */
    public static final Map<String, String> PEER_LOADER = Map.of("torchdata.nodes", TORCHDATA_NODES);

    private HarnessLoaders() {}

    /** The loader's name as the summary and the plots write it. */
    public static String title(String loader) {
        return switch (loader) {
            case STOKE -> "Stoke";
            case PYTORCH -> "PyTorch (PIL)";
            case PYTORCH_TENSOR -> "PyTorch (decode_jpeg + v2)";
            case TORCHDATA_NODES -> "torchdata.nodes";
            default -> loader;
        };
    }

    /** Whether torch_loader.py runs it. */
    public static boolean torchSide(String loader) {
        return TORCH_SIDE.contains(loader);
    }

    /**
     * Whether the loader runs on the dataset. On the raw dataset nothing is decoded, so the tensor
     * path would be the PIL path run again.
     */
    public static boolean runsOn(String loader, String dataset) {
        return !(loader.equals(PYTORCH_TENSOR) && dataset.equals("raw"));
    }
}
