// engine/view/internal/viewer_assets.h
//
// What tools/cmake/viewer.cmake embeds from tools/viewer/ into the
// generated viewer_assets.cc: the viewer's own script and style, and
// elkjs's bundled layout engine with its version ("" each when elkjs was
// not installed at build time: bash tools/setup.sh installs it).

#ifndef DAGRAD_ENGINE_VIEW_INTERNAL_VIEWER_ASSETS_H_
#define DAGRAD_ENGINE_VIEW_INTERNAL_VIEWER_ASSETS_H_

namespace dagrad::view_assets {

extern const char kViewerJs[];
extern const char kViewerCss[];
extern const char kElkJs[];
extern const char kElkVersion[];

}  // namespace dagrad::view_assets

#endif  // DAGRAD_ENGINE_VIEW_INTERNAL_VIEWER_ASSETS_H_
