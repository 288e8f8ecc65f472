package io.stoke.embed;

import ai.onnxruntime.NodeInfo;
import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.TensorInfo;
import io.stoke.loader.transform.TransformSpec;
import java.util.Arrays;
import java.util.Map;

/**
 * What a model takes and gives, read from the model itself: its one image input (name, layout,
 * side) and the output to keep (name, width). Two input contracts are understood:
 * <ul>
 *   <li>float32 {@code [N, 3, H, W]}: pixels as torchvision's {@code ToTensor} + {@code Normalize}
 *       give them, with the run's {@code --mean} and {@code --std} (ImageNet's by default, the
 *       convention of torchvision's models; CLIP's for open_clip's);
 *   <li>uint8 {@code [N, H, W, 3]}: raw pixels, the normalisation inside the graph (4x fewer bytes
 *       to hand over, and the form to use on a GPU).
 * </ul>
 * H and W must be equal (a square crop) or dynamic; the batch dimension may be dynamic. The
 * preprocessing the exporter recorded in the model's metadata ({@link ModelPreprocess}) is held
 * against the run's transform.
 *
 * @param side       H = W when the model fixes them, else 0 (the loader's crop decides)
 * @param outputName the output kept
 * @param dimension  the kept output's values per image (its shape after N, multiplied out)
 * @param preprocess the preprocessing the model declares, {@link ModelPreprocess#NONE} if none
 */
public record ModelContract(
        String inputName, Layout layout, int side, String outputName, long dimension, ModelPreprocess preprocess) {
    /** The input's element type and layout. */
    public enum Layout {
        FLOAT32_NCHW,
        UINT8_NHWC
    }

    /** Reads the contract of {@code session}; {@code outputName} may be null when the model has one output. */
    public static ModelContract of(OrtSession session, String outputName) throws OrtException {
        Map<String, NodeInfo> inputs = session.getInputInfo();
        if (inputs.size() != 1) {
            throw new IllegalArgumentException("the model takes " + inputs.size() + " inputs " + inputs.keySet()
                    + "; stoke embed feeds models with one image input");
        }
        NodeInfo input = inputs.values().iterator().next();
        if (!(input.getInfo() instanceof TensorInfo in) || in.getShape().length != 4) {
            throw new IllegalArgumentException("the model's input " + input.getName() + " is " + input.getInfo()
                    + ", not a 4-dimensional image tensor");
        }
        long[] s = in.getShape();
        Layout layout;
        long h;
        long w;
        if (in.type == OnnxJavaType.FLOAT && s[1] == 3) {
            layout = Layout.FLOAT32_NCHW;
            h = s[2];
            w = s[3];
        } else if (in.type == OnnxJavaType.UINT8 && s[3] == 3) {
            layout = Layout.UINT8_NHWC;
            h = s[1];
            w = s[2];
        } else {
            throw new IllegalArgumentException("the model's input " + input.getName() + " is " + in.type + " "
                    + Arrays.toString(s) + "; stoke embed feeds float32 [N, 3, H, W] (normalised) or uint8"
                    + " [N, H, W, 3]");
        }
        if (h != w && h > 0 && w > 0) {
            throw new IllegalArgumentException("the model's input is " + h + "x" + w + "; Stoke's crops are square");
        }
        int side = (int) Math.max(0, Math.max(h, w));

        Map<String, NodeInfo> outputs = session.getOutputInfo();
        NodeInfo output;
        if (outputName != null) {
            output = outputs.get(outputName);
            if (output == null) {
                throw new IllegalArgumentException(
                        "the model has no output " + outputName + "; its outputs are " + outputs.keySet());
            }
        } else if (outputs.size() == 1) {
            output = outputs.values().iterator().next();
        } else {
            throw new IllegalArgumentException("the model has " + outputs.size() + " outputs " + outputs.keySet()
                    + ": name the one to keep with --output-name");
        }
        if (!(output.getInfo() instanceof TensorInfo out) || out.type != OnnxJavaType.FLOAT) {
            throw new IllegalArgumentException(
                    "the output " + output.getName() + " is " + output.getInfo() + ", not a float32 tensor");
        }
        long dimension = 1;
        long[] os = out.getShape();
        for (int i = 1; i < os.length; i++) {
            if (os[i] < 1) {
                throw new IllegalArgumentException("the output " + output.getName() + " has shape "
                        + Arrays.toString(os) + ": only its first (batch) dimension may be dynamic");
            }
            dimension *= os[i];
        }
        ModelPreprocess preprocess;
        try {
            preprocess = ModelPreprocess.of(session.getMetadata().getCustomMetadata());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(e.getMessage() + " (as its exporter wrote it)", e);
        }
        return new ModelContract(input.getName(), layout, side, output.getName(), dimension, preprocess);
    }

    /**
     * The loader's transform for this model: {@code eval}'s resize and crop, its output set to the
     * model's input (float32 normalised with {@code eval}'s mean and std, or uint8).
     *
     * @throws IllegalArgumentException when the model fixes a side other than {@code eval}'s crop,
     *     or declares a preprocessing {@code eval} differs from
     */
    public TransformSpec transform(TransformSpec eval) {
        if (side > 0 && side != eval.crop()) {
            throw new IllegalArgumentException("the model takes " + side + "x" + side + " images, the crop is "
                    + eval.crop() + "x" + eval.crop() + " (--crop " + side + ")");
        }
        preprocess.check(eval, layout == Layout.FLOAT32_NCHW);
        return eval.withOutput(
                layout == Layout.FLOAT32_NCHW ? TransformSpec.Output.FLOAT32_CHW : TransformSpec.Output.UINT8_HWC);
    }
}
