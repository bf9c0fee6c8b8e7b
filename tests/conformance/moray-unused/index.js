// changefeed's lib/index.js loads its Publisher (and so moray) beside the
// Listener; only the Listener is used by the conformance test. Any use of
// moray is a mistake and fails loudly.
function unused() {
    throw new Error('moray is not installed: the conformance test drives only changefeed\'s Listener');
}
module.exports = { createClient: unused };
