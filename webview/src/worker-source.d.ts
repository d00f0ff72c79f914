// Provided by webview/build.mjs: the bundled layout worker as JavaScript text.
declare module "virtual:layout-worker" {
  const source: string;
  export default source;
}
